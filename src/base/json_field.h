// Reading fields of JSON files that people write, edit or truncate. nlohmann's value() and
// get() throw when a field holds another type, and const operator[] on a missing key is
// undefined behaviour; a file loader that uses them crashes on a file with "n_layer": "8".
// json_field and json_as never throw: a field that is missing or of another type is nullopt,
// and the loader turns that into its one error line.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace strata {

// `value` as a T: a string for std::string, true or false for bool, an integer within T's range
// for other integral types, any number for floating point; nullopt for anything else.
template <class T>
std::optional<T> json_as(const nlohmann::json& value) {
  if constexpr (std::is_same_v<T, std::string>) {
    if (value.is_string()) return value.get<std::string>();
  } else if constexpr (std::is_same_v<T, bool>) {
    if (value.is_boolean()) return value.get<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    if (value.is_number_unsigned()) {
      const uint64_t v = value.get<uint64_t>();
      if (v <= uint64_t(std::numeric_limits<T>::max())) return T(v);
    } else if (value.is_number_integer()) {
      const int64_t v = value.get<int64_t>();
      if constexpr (std::is_signed_v<T>) {
        if (v >= int64_t(std::numeric_limits<T>::min()) &&
            v <= int64_t(std::numeric_limits<T>::max()))
          return T(v);
      } else if (v >= 0 && uint64_t(v) <= uint64_t(std::numeric_limits<T>::max())) {
        return T(v);
      }
    }
  } else {
    static_assert(std::is_floating_point_v<T>, "json_as reads strings, bools and numbers");
    if (value.is_number()) return value.get<T>();
  }
  return std::nullopt;
}

// The field `key` of `object`, or nullptr when `object` is not an object or has no such field.
inline const nlohmann::json* json_member(const nlohmann::json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  const auto found = object.find(key);
  return found == object.end() ? nullptr : &*found;
}

// The field `key` of `object` as a T (see json_as); nullopt when it is missing or not a T.
template <class T>
std::optional<T> json_field(const nlohmann::json& object, std::string_view key) {
  const nlohmann::json* member = json_member(object, key);
  return member ? json_as<T>(*member) : std::nullopt;
}

// `text` as a JSON string literal, quoted and with control characters escaped: a value read from
// a file, fit for a one-line error message.
inline std::string json_quoted(std::string_view text) {
  return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace strata
