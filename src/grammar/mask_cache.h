// SharedMaskCache: mask-cache entries of terminal-rule positions shared by
// every grammar compiled for one vocabulary.
//
// A terminal rule's position mask depends only on the rule's own automaton
// (it references no other rule) and the vocabulary, so the JSON string,
// number, key... rules of different schemas share their entries: the
// expensive first walk of "inside a string" is paid once per vocabulary,
// not once per schema. Keyed by the rule's serialized automaton (exact, no
// hash collisions; interned to an id once per rule) and the rule-local
// state.
//
// Thread-safe. Entries are immutable and live as long as the cache or any
// CompiledGrammar using them (shared_ptr).
#pragma once

#include <cstdint>
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
  explicit SharedMaskCache(size_t max_entries = 1 << 16, size_t max_signature_bytes = size_t{64} << 20)
      : max_entries_(max_entries), max_signature_bytes_(max_signature_bytes) {}

  // Id of a rule signature, the same for equal signatures (once per rule at
  // grammar construction: a long signature — a bounded string's automaton
  // is ~1 MB — is compared here, not on every lookup). Ids are never
  // reused: when the interned signatures pass their byte bound they are
  // forgotten, and a signature seen again gets a fresh id (its entries are
  // recomputed), so a stale id can never name another rule's entries.
  uint64_t Intern(const std::string& rule_signature) EXCLUDES(mutex_) {
    MutexLock lock(mutex_);
    auto it = ids_.find(rule_signature);
    if (it != ids_.end()) return it->second;
    if (signature_bytes_ + rule_signature.size() > max_signature_bytes_) {
      ids_.clear();
      signature_bytes_ = 0;
    }
    signature_bytes_ += rule_signature.size();
    return ids_.emplace(rule_signature, next_id_++).first->second;
  }

  std::shared_ptr<const PositionMask> Find(uint64_t signature_id, uint32_t local_state) const
      EXCLUDES(mutex_) {
    MutexLock lock(mutex_);
    auto it = entries_.find({signature_id, local_state});
    return it == entries_.end() ? nullptr : it->second;
  }

  void Insert(uint64_t signature_id, uint32_t local_state, std::shared_ptr<const PositionMask> entry)
      EXCLUDES(mutex_) {
    MutexLock lock(mutex_);
    if (entries_.size() >= max_entries_) entries_.clear();  // simple bound
    entries_.emplace(std::make_pair(signature_id, local_state), std::move(entry));
  }

  size_t size() const EXCLUDES(mutex_) {
    MutexLock lock(mutex_);
    return entries_.size();
  }

 private:
  size_t max_entries_;
  size_t max_signature_bytes_;
  mutable Mutex mutex_;
  std::map<std::string, uint64_t> ids_ GUARDED_BY(mutex_);
  size_t signature_bytes_ GUARDED_BY(mutex_) = 0;
  uint64_t next_id_ GUARDED_BY(mutex_) = 0;
  std::map<std::pair<uint64_t, uint32_t>, std::shared_ptr<const PositionMask>> entries_ GUARDED_BY(mutex_);
};

}  // namespace deepinfer::grammar
