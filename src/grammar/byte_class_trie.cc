#include "grammar/byte_class_trie.h"

#include <algorithm>

namespace deepinfer::grammar {

std::optional<ByteClasses> RuleByteClasses(const GrammarAutomaton& a, RuleId rule, size_t max_classes,
                                           uint32_t from) {
  const uint32_t begin = a.rule_start[rule], end = a.rule_end[rule];
  if (from == kNoState) from = begin;
  for (uint32_t s = begin; s < end; ++s) {
    if (a.dense_offset[s] == kNoState) return std::nullopt;
  }
  ByteClasses out;
  // The states reached from `from` without a backslash (a terminal rule's
  // transitions stay inside it).
  out.holds.assign(end - begin, 0);
  std::vector<uint32_t> stack = {from};
  out.holds[from - begin] = 1;
  while (!stack.empty()) {
    uint32_t s = stack.back();
    stack.pop_back();
    for (int b = 0; b < 256; ++b) {
      uint32_t next = a.DenseNext(s, static_cast<uint8_t>(b));
      if (b == '\\' || next == kNoState) continue;
      if (next < begin || next >= end) return std::nullopt;
      if (out.holds[next - begin]) continue;
      out.holds[next - begin] = 1;
      stack.push_back(next);
    }
  }
  // A hash of each byte's column of transitions over those states.
  std::array<uint64_t, 256> column{};
  for (uint32_t s = begin; s < end; ++s) {
    if (!out.holds[s - begin]) continue;
    const uint32_t* row = &a.dense_next[a.dense_offset[s]];
    for (int b = 0; b < 256; ++b) column[b] = column[b] * 0x9E3779B97F4A7C15ull + row[b] + 1;
  }
  std::vector<uint64_t> class_column;
  for (int b = 0; b < 256; ++b) {
    auto it = b == '\\' ? class_column.end() : std::find(class_column.begin(), class_column.end(), column[b]);
    if (it == class_column.end()) {
      if (class_column.size() == max_classes) return std::nullopt;
      class_column.push_back(column[b]);
      out.representative.push_back(static_cast<uint8_t>(b));
      it = class_column.end() - 1;
    }
    out.class_of[b] = static_cast<uint8_t>(it - class_column.begin());
  }
  out.run_class = out.class_of['\\'];
  // Exact check (a hash collision would merge bytes that differ). A byte
  // whose column equals the backslash's may join its class: its tokens are
  // then run too, which is exact anyway.
  for (uint32_t s = begin; s < end; ++s) {
    if (!out.holds[s - begin]) continue;
    const uint32_t* row = &a.dense_next[a.dense_offset[s]];
    for (int b = 0; b < 256; ++b) {
      if (row[b] != row[out.representative[out.class_of[b]]]) return std::nullopt;
    }
  }
  return out;
}

std::unique_ptr<const ByteClassTrie> ByteClassTrie::Build(const Vocabulary& vocab, const ByteClasses& classes,
                                                          uint32_t max_nodes) {
  std::unique_ptr<ByteClassTrie> trie(new ByteClassTrie(classes));
  if (!trie->Fill(vocab, max_nodes)) return nullptr;
  return trie;
}

bool ByteClassTrie::Fill(const Vocabulary& vocab, uint32_t max_nodes) {
  const uint32_t n = static_cast<uint32_t>(vocab.sorted_ids().size());
  const auto& lcp = vocab.sorted_lcp();
  // 1. Class nodes in creation order, following the sorted tokens (trie
  //    preorder, so a token's prefix nodes are those of the previous token
  //    up to the common prefix).
  //    Children are a dense [node][class] table (0 = none; the root is
  //    nobody's child): few classes and at most max_nodes nodes.
  const size_t num_classes = classes_.size();
  std::vector<uint32_t> parent = {0};
  std::vector<uint8_t> cls = {0};
  std::vector<uint32_t> children(num_classes, 0);
  std::vector<uint32_t> at(vocab.max_token_length() + 1, 0);  // class node per depth
  std::vector<uint32_t> end_node(n);
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view tok = vocab.sorted_token(i);
    for (size_t d = lcp[i]; d < tok.size(); ++d) {
      uint8_t c = classes_.class_of[static_cast<uint8_t>(tok[d])];
      uint32_t* child = &children[at[d] * num_classes + c];
      if (*child == 0) {
        if (parent.size() >= max_nodes) return false;
        *child = static_cast<uint32_t>(parent.size());
        parent.push_back(at[d]);
        cls.push_back(c);
        children.resize(children.size() + num_classes, 0);  // invalidates `child`
      }
      at[d + 1] = children[at[d] * num_classes + c];
    }
    end_node[i] = at[tok.size()];
  }
  const uint32_t num_nodes = static_cast<uint32_t>(parent.size());
  // 2. Preorder with children by ascending class.
  std::vector<uint32_t> pre(num_nodes), by_pre;
  by_pre.reserve(num_nodes);
  std::vector<uint32_t> stack = {0};
  while (!stack.empty()) {
    uint32_t x = stack.back();
    stack.pop_back();
    pre[x] = static_cast<uint32_t>(by_pre.size());
    by_pre.push_back(x);
    for (size_t c = num_classes; c-- > 0;) {
      if (uint32_t child = children[x * num_classes + c]; child != 0) stack.push_back(child);
    }
  }
  std::vector<uint32_t> size(num_nodes, 1);
  for (uint32_t k = num_nodes; k-- > 1;) size[parent[by_pre[k]]] += size[by_pre[k]];
  node_class_.resize(num_nodes);
  node_depth_.resize(num_nodes);
  subtree_end_.resize(num_nodes);
  for (uint32_t k = 0; k < num_nodes; ++k) {
    uint32_t x = by_pre[k];
    node_class_[k] = cls[x];
    node_depth_[k] = k == 0 ? 0 : static_cast<uint16_t>(node_depth_[pre[parent[x]]] + 1);
    subtree_end_[k] = k + size[x];
  }
  // 3. Tokens grouped by end node in preorder (stable: ascending within one).
  token_begin_.assign(num_nodes + 1, 0);
  for (uint32_t i = 0; i < n; ++i) ++token_begin_[pre[end_node[i]] + 1];
  for (uint32_t k = 0; k < num_nodes; ++k) token_begin_[k + 1] += token_begin_[k];
  tokens_.resize(n);
  std::vector<uint32_t> fill(token_begin_.begin(), token_begin_.end() - 1);
  for (uint32_t i = 0; i < n; ++i) tokens_[fill[pre[end_node[i]]]++] = i;
  return true;
}

}  // namespace deepinfer::grammar
