// StopStringMatcher: finds the first stop string in streamed text.
//
// Text arrives in pieces (one per detokenized token), and a stop string may
// span pieces, so the matcher holds back the longest tail of the text that
// could still be the start of a stop string; everything before it is safe to
// stream. On a match the text is cut right before the stop string (OpenAI
// semantics: the stop sequence is not part of the output).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace deepinfer {

class StopStringMatcher {
 public:
  // Empty strings are ignored.
  explicit StopStringMatcher(std::vector<std::string> stops);

  // Appends `text`; returns the text that may be streamed now. After a match
  // (matched() true), returns the text up to the stop string once, then "".
  std::string Push(std::string_view text);
  // The held-back tail, at the end of generation without a match.
  std::string Flush();
  bool matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;  // a suffix that is a proper prefix of some stop string
  bool matched_ = false;
};

}  // namespace deepinfer
