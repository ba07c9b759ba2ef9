#include "grammar/vocabulary.h"

#include <algorithm>

namespace deepinfer::grammar {

namespace {
uint64_t Fnv1a(uint64_t h, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}
}  // namespace

Vocabulary::Vocabulary(std::vector<std::string> token_bytes, const std::vector<int32_t>& eos_ids,
                       const std::vector<int32_t>& special_ids)
    : tokens_(std::move(token_bytes)), is_eos_(tokens_.size(), 0), maskable_(tokens_.size(), 0) {
  std::vector<uint8_t> excluded(tokens_.size(), 0);
  for (int32_t id : eos_ids) {
    if (id >= 0 && static_cast<size_t>(id) < tokens_.size() && !is_eos_[id]) {
      is_eos_[id] = 1;
      excluded[id] = 1;
      eos_ids_.push_back(id);
    }
  }
  for (int32_t id : special_ids) {
    if (id >= 0 && static_cast<size_t>(id) < tokens_.size()) excluded[id] = 1;
  }
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < tokens_.size(); ++i) {
    uint64_t len = tokens_[i].size();
    h = Fnv1a(h, &len, sizeof(len));
    h = Fnv1a(h, tokens_[i].data(), tokens_[i].size());
    h = Fnv1a(h, &excluded[i], 1);
    // Longer tokens than 65535 bytes cannot be tracked by the lcp array.
    if (!excluded[i] && !tokens_[i].empty() && tokens_[i].size() < 65535) {
      sorted_ids_.push_back(static_cast<int32_t>(i));
      maskable_[i] = 1;
      max_len_ = std::max(max_len_, tokens_[i].size());
    }
  }
  for (int32_t id : eos_ids_) h = Fnv1a(h, &id, sizeof(id));
  fingerprint_ = h;
  std::sort(sorted_ids_.begin(), sorted_ids_.end(),
            [&](int32_t a, int32_t b) { return tokens_[a] != tokens_[b] ? tokens_[a] < tokens_[b] : a < b; });
  sorted_offset_.push_back(0);
  for (int32_t id : sorted_ids_) {
    sorted_bytes_ += tokens_[id];
    sorted_offset_.push_back(static_cast<uint32_t>(sorted_bytes_.size()));
  }
  sorted_lcp_.resize(sorted_ids_.size(), 0);
  for (size_t i = 1; i < sorted_ids_.size(); ++i) {
    const std::string& a = tokens_[sorted_ids_[i - 1]];
    const std::string& b = tokens_[sorted_ids_[i]];
    size_t n = std::min(a.size(), b.size());
    size_t l = 0;
    while (l < n && a[l] == b[l]) ++l;
    sorted_lcp_[i] = static_cast<uint16_t>(l);
  }
  BuildTrie();
}

void Vocabulary::BuildTrie() {
  const size_t n = sorted_ids_.size();
  node_base_.resize(n);
  std::vector<uint32_t> parent;    // per node; kNone for depth-1 nodes
  std::vector<uint8_t> edge_byte;  // last byte of the node's prefix
  constexpr uint32_t kNone = 0xFFFFFFFFu;
  std::vector<uint32_t> open(max_len_ + 1, kNone);  // open[d]: node of the current path's prefix d
  size_t open_depth = 0;
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view tok = sorted_token(i);
    size_t lcp = sorted_lcp_[i];
    // Nodes deeper than the shared prefix end before token i.
    for (; open_depth > lcp; --open_depth) node_end_[open[open_depth]] = i;
    node_base_[i] = static_cast<uint32_t>(node_end_.size());
    for (size_t d = lcp + 1; d <= tok.size(); ++d) {
      uint32_t id = static_cast<uint32_t>(node_end_.size());
      node_end_.push_back(static_cast<uint32_t>(n));
      parent.push_back(d >= 2 ? open[d - 1] : kNone);
      edge_byte.push_back(static_cast<uint8_t>(tok[d - 1]));
      open[d] = id;
    }
    open_depth = tok.size();
  }
  // Children come after their parent (preorder): fold bottom-up.
  node_below_.assign(node_end_.size() * 4, 0);
  for (size_t k = node_end_.size(); k-- > 0;) {
    if (parent[k] == kNone) continue;
    uint64_t* up = &node_below_[size_t{parent[k]} * 4];
    const uint64_t* below = &node_below_[k * 4];
    for (int w = 0; w < 4; ++w) up[w] |= below[w];
    up[edge_byte[k] >> 6] |= uint64_t{1} << (edge_byte[k] & 63);
  }
}

}  // namespace deepinfer::grammar
