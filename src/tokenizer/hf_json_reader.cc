#include "tokenizer/hf_json_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>

namespace deepinfer {

namespace {

using nlohmann::json;

// SAX handler: captures model.vocab / model.merges, builds a DOM for the rest.
class Handler : public nlohmann::json_sax<json> {
 public:
  explicit Handler(HfTokenizerJson* out) : out_(out) {}

  const std::string& error() const { return error_; }
  bool invalid_argument() const { return invalid_argument_; }

  bool null() override { return Value(json(nullptr)); }
  bool boolean(bool v) override { return Value(json(v)); }
  bool number_integer(number_integer_t v) override { return Integer(v); }
  bool number_unsigned(number_unsigned_t v) override {
    return Integer(v > static_cast<number_unsigned_t>(INT64_MAX) ? -1 : static_cast<int64_t>(v));
  }
  bool number_float(number_float_t v, const string_t&) override { return Value(json(v)); }
  bool binary(binary_t& v) override { return Value(json::binary(std::move(v))); }

  bool string(string_t& v) override {
    if (mode_ == Mode::kMerges) {
      if (merge_depth_ == 1) {
        out_->merges.push_back(std::move(v));
      } else if (pair_.size() < 2) {
        pair_.push_back(std::move(v));
      } else {
        return Fail(MergeField(), "expected a pair of strings");
      }
      return true;
    }
    if (mode_ == Mode::kVocab) return Fail(VocabField(), "expected a token id");
    return Value(json(std::move(v)));
  }

  bool key(string_t& k) override {
    if (mode_ == Mode::kVocab) {
      vocab_key_ = std::move(k);
      return true;
    }
    keys_.back() = std::move(k);
    return true;
  }

  bool start_object(std::size_t) override {
    if (mode_ == Mode::kMerges) return Fail(MergeField(), "expected a string \"a b\" or a pair of strings");
    if (mode_ == Mode::kVocab) return Fail(VocabField(), "expected a token id");
    if (AtModelField("vocab")) {
      mode_ = Mode::kVocab;
      out_->has_vocab = true;
      return Value(json(nullptr));
    }
    return Open(json::object());
  }
  bool end_object() override {
    if (mode_ == Mode::kVocab) {
      mode_ = Mode::kNone;
      return true;
    }
    return Close();
  }

  bool start_array(std::size_t) override {
    if (mode_ == Mode::kVocab) return Fail(VocabField(), "expected a token id");
    if (mode_ == Mode::kMerges) {
      if (merge_depth_ != 1) return Fail(MergeField(), "expected a pair of strings");
      merge_depth_ = 2;
      pair_.clear();
      return true;
    }
    if (AtModelField("merges")) {
      mode_ = Mode::kMerges;
      merge_depth_ = 1;
      out_->has_merges = true;
      return Value(json(nullptr));
    }
    return Open(json::array());
  }
  bool end_array() override {
    if (mode_ == Mode::kMerges) {
      if (merge_depth_ == 1) {
        mode_ = Mode::kNone;
        return true;
      }
      merge_depth_ = 1;
      if (pair_.size() != 2 || pair_[0].empty() || pair_[1].empty() ||
          pair_[0].find(' ') != std::string::npos) {
        return Fail(MergeField(), "expected a pair of non-empty strings, the left one without spaces");
      }
      out_->merges.push_back(pair_[0] + " " + pair_[1]);
      return true;
    }
    return Close();
  }

  bool parse_error(std::size_t position, const std::string& last_token,
                   const nlohmann::detail::exception& e) override {
    if (error_.empty()) error_ = std::string("invalid JSON: ") + e.what();
    return false;
  }

 private:
  enum class Mode { kNone, kVocab, kMerges };

  bool Integer(int64_t v) {
    if (mode_ == Mode::kVocab) {
      out_->vocab.emplace_back(std::move(vocab_key_), v);
      return true;
    }
    if (mode_ == Mode::kMerges) return Fail(MergeField(), "expected a string \"a b\" or a pair of strings");
    return Value(json(v));
  }

  // True when the container about to open is root.model.<name>.
  bool AtModelField(const char* name) const {
    return stack_.size() == 2 && keys_[0] == "model" && keys_[1] == name && stack_[1]->is_object();
  }

  // Places `v` into the open container (or as the root); returns its address.
  json* Place(json&& v) {
    if (stack_.empty()) {
      out_->rest = std::move(v);
      return &out_->rest;
    }
    json* parent = stack_.back();
    if (parent->is_array()) {
      parent->push_back(std::move(v));
      return &parent->back();
    }
    json& slot = (*parent)[keys_.back()];
    slot = std::move(v);
    return &slot;
  }
  bool Value(json&& v) {
    Place(std::move(v));
    return true;
  }
  bool Open(json&& container) {
    stack_.push_back(Place(std::move(container)));
    keys_.emplace_back();
    return true;
  }
  bool Close() {
    stack_.pop_back();
    keys_.pop_back();
    return true;
  }

  std::string VocabField() const { return "model.vocab[\"" + vocab_key_ + "\"]"; }
  std::string MergeField() const { return "model.merges[" + std::to_string(out_->merges.size()) + "]"; }
  bool Fail(const std::string& field, const std::string& problem) {
    error_ = field + ": " + problem;
    invalid_argument_ = true;
    return false;
  }

  HfTokenizerJson* out_;
  std::vector<json*> stack_;       // open containers
  std::vector<std::string> keys_;  // per open container: the current key (objects)
  Mode mode_ = Mode::kNone;
  std::string vocab_key_;
  int merge_depth_ = 0;
  std::vector<std::string> pair_;
  std::string error_;
  bool invalid_argument_ = false;
};

// Expected size of the file's contents: the gzip trailer's ISIZE (size mod
// 2^32) for gzip files, else the file size. Only a hint for the buffer.
size_t SizeHint(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return 0;
  unsigned char magic[2] = {0, 0};
  size_t hint = 0, file_size_cap = 0;
  if (std::fread(magic, 1, 2, f) == 2 && std::fseek(f, 0, SEEK_END) == 0) {
    const long file_size = std::ftell(f);
    hint = file_size > 0 ? static_cast<size_t>(file_size) : 0;
    file_size_cap = hint * 16;
    unsigned char trailer[4];
    if (magic[0] == 0x1f && magic[1] == 0x8b && file_size >= 18 && std::fseek(f, -4, SEEK_END) == 0 &&
        std::fread(trailer, 1, 4, f) == 4) {
      hint = trailer[0] | (trailer[1] << 8) | (trailer[2] << 16) | (static_cast<size_t>(trailer[3]) << 24);
    }
  }
  std::fclose(f);
  // A corrupt trailer must not make us allocate gigabytes up front; real JSON
  // compresses about 4-5x.
  return std::min<size_t>(hint, file_size_cap);
}

}  // namespace

StatusOr<std::string> ReadMaybeGzip(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) return NotFound(path + ": cannot open");
  gzbuffer(file, 1 << 18);
  std::string data;
  data.resize(SizeHint(path) + 1);  // +1: the read loop then ends without growing
  size_t size = 0;
  while (true) {
    if (data.size() == size) data.resize(std::max<size_t>(data.size() * 2, 1 << 16));
    const unsigned chunk = static_cast<unsigned>(std::min<size_t>(data.size() - size, 1u << 30));
    const int n = gzread(file, data.data() + size, chunk);
    if (n < 0) {
      int errnum = 0;
      const std::string message = gzerror(file, &errnum);
      gzclose(file);
      return DataLoss(path + ": read error: " + message);
    }
    if (n == 0) break;
    size += static_cast<size_t>(n);
  }
  data.resize(size);
  // A truncated gzip stream shows up only in the error state at the end.
  int errnum = 0;
  const std::string message = gzerror(file, &errnum);
  gzclose(file);
  if (errnum != Z_OK && errnum != Z_STREAM_END) return DataLoss(path + ": " + message);
  return data;
}

StatusOr<HfTokenizerJson> ReadHfTokenizerJson(const std::string& path) {
  DI_ASSIGN_OR_RETURN(std::string text, ReadMaybeGzip(path));
  HfTokenizerJson out;
  Handler handler(&out);
  bool ok = false;
  try {
    ok = json::sax_parse(text, &handler);
  } catch (const std::exception& e) {
    return DataLoss(path + ": invalid JSON: " + e.what());
  }
  if (!ok) {
    const std::string message = path + ": " + (handler.error().empty() ? "invalid JSON" : handler.error());
    return handler.invalid_argument() ? InvalidArgument(message) : DataLoss(message);
  }
  return out;
}

}  // namespace deepinfer
