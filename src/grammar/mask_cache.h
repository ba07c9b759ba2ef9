// SharedMaskCache: mask-cache entries of terminal-rule positions shared by
// every grammar compiled for one vocabulary.
//
// A terminal rule's position mask depends only on the rule's own automaton
// (it references no other rule) and the vocabulary, so the JSON string,
// number, key... rules of different schemas share their entries: the
// expensive first walk of "inside a string" is paid once per vocabulary,
// not once per schema. Keyed by the rule's serialized automaton (exact, no
// hash collisions) and the rule-local state.
//
// Thread-safe. Entries are immutable and live as long as the cache or any
// CompiledGrammar using them (shared_ptr).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>

#include "core/mutex.h"
#include "core/thread_annotations.h"
#include "grammar/position_mask.h"

namespace deepinfer::grammar {

class SharedMaskCache {
 public:
  explicit SharedMaskCache(size_t max_entries = 1 << 16) : max_entries_(max_entries) {}

  std::shared_ptr<const PositionMask> Find(const std::string& rule_signature, uint32_t local_state) const
      EXCLUDES(mutex_) {
    MutexLock lock(mutex_);
    auto it = entries_.find({rule_signature, local_state});
    return it == entries_.end() ? nullptr : it->second;
  }

  void Insert(const std::string& rule_signature, uint32_t local_state,
              std::shared_ptr<const PositionMask> entry) EXCLUDES(mutex_) {
    MutexLock lock(mutex_);
    if (entries_.size() >= max_entries_) entries_.clear();  // simple bound
    entries_.emplace(std::make_pair(rule_signature, local_state), std::move(entry));
  }

  size_t size() const EXCLUDES(mutex_) {
    MutexLock lock(mutex_);
    return entries_.size();
  }

 private:
  size_t max_entries_;
  mutable Mutex mutex_;
  std::map<std::pair<std::string, uint32_t>, std::shared_ptr<const PositionMask>> entries_ GUARDED_BY(mutex_);
};

}  // namespace deepinfer::grammar
