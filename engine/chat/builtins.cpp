#include "engine/chat/builtins.h"

#include "engine/chat/template_error.h"
#include "engine/chat/text.h"

namespace tern::engine::chat {

namespace {

const Value& undefined_value() {
  static const Value kUndefined;
  return kUndefined;
}

}  // namespace

ArgumentReader::ArgumentReader(const CallArgs& args, std::string_view function,
                               std::initializer_list<std::string_view> names)
    : values_(names.size(), nullptr) {
  if (args.positional.size() > names.size()) {
    throw TemplateError(std::string(function) + "() takes at most " + std::to_string(names.size()) +
                        " arguments (" + std::to_string(args.positional.size()) + " given)");
  }
  for (std::size_t i = 0; i < args.positional.size(); ++i) values_[i] = &args.positional[i];
  for (const auto& [key, value] : args.keyword) {
    std::size_t index = 0;
    for (std::string_view name : names) {
      if (name == key) break;
      ++index;
    }
    if (index == names.size()) {
      throw TemplateError(std::string(function) + "() got an unexpected keyword argument '" + key +
                          "'");
    }
    values_[index] = &value;
  }
}

const Value& ArgumentReader::get(std::size_t index) const {
  if (index >= values_.size() || values_[index] == nullptr) return undefined_value();
  return *values_[index];
}

ValueList iterate(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kUndefined:
      return {};
    case Value::Kind::kList:
      return value.as_list();
    case Value::Kind::kDict: {
      ValueList keys;
      keys.reserve(value.as_dict().size());
      for (const auto& [key, item] : value.as_dict()) keys.push_back(Value::string(key));
      return keys;
    }
    case Value::Kind::kString: {
      ValueList chars;
      for (std::string& c : text::code_points(value.as_string())) {
        chars.push_back(Value::string(std::move(c)));
      }
      return chars;
    }
    default:
      throw TemplateError("'" + std::string(type_name(value)) + "' object is not iterable");
  }
}

}  // namespace tern::engine::chat
