#include "grammar/tagged_json.h"

namespace deepinfer::grammar {
namespace {

// Length-prefixed, so no field's text can imitate a separator.
void AppendField(std::string* key, const std::string& field) {
  *key += std::to_string(field.size());
  *key += ':';
  *key += field;
}

}  // namespace

std::string TaggedJsonFormat::CacheKey() const {
  std::string key = std::to_string(min_items) + "," + std::to_string(max_items) + ";";
  AppendField(&key, prefix);
  AppendField(&key, separator);
  AppendField(&key, suffix);
  for (const Tag& t : tags) {
    AppendField(&key, t.begin);
    AppendField(&key, t.schema);
    AppendField(&key, t.end);
  }
  return key;
}

StatusOr<Grammar> TaggedJsonToGrammar(const TaggedJsonFormat& format, const JsonSchemaOptions& options) {
  if (format.tags.empty()) return InvalidArgument("tagged JSON: no tags");
  if (format.min_items < 1 ||
      (format.max_items != Grammar::kUnbounded && format.max_items < format.min_items)) {
    return InvalidArgument("tagged JSON: need 1 <= min_items <= max_items");
  }
  Grammar g;
  std::vector<ExprId> alternatives;
  for (size_t i = 0; i < format.tags.size(); ++i) {
    const TaggedJsonFormat::Tag& t = format.tags[i];
    auto schema = JsonSchemaToGrammar(t.schema, options);
    if (!schema.ok()) return schema.status().WithContext("tag " + std::to_string(i));
    const RuleId root = g.Import(*schema, "t" + std::to_string(i) + "_");
    alternatives.push_back(g.Sequence({g.Literal(t.begin), g.Ref(root), g.Literal(t.end)}));
  }
  const RuleId item = g.DefineRule("item", g.Choice(std::move(alternatives)));
  const int32_t more_max =
      format.max_items == Grammar::kUnbounded ? Grammar::kUnbounded : format.max_items - 1;
  const ExprId more =
      g.Repeat(g.Sequence({g.Literal(format.separator), g.Ref(item)}), format.min_items - 1, more_max);
  g.set_root(g.DefineRule(
      "root", g.Sequence({g.Literal(format.prefix), g.Ref(item), more, g.Literal(format.suffix)})));
  return g;
}

}  // namespace deepinfer::grammar
