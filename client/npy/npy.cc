#include "normserve/npy/npy.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace normserve::npy {
namespace {

constexpr absl::string_view kMagic = "\x93NUMPY";

// The text after `'key':` in a header dict, up to (not including) the next
// top-level ',' or '}' (tuples are kept whole).
absl::StatusOr<absl::string_view> DictValue(absl::string_view header, absl::string_view key) {
  const std::string quoted = absl::StrCat("'", key, "'");
  size_t pos = header.find(quoted);
  if (pos == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("npy header has no '", key, "': ", header));
  }
  pos = header.find(':', pos + quoted.size());
  if (pos == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("npy header: no ':' after '", key, "'"));
  }
  ++pos;
  int depth = 0;
  size_t end = pos;
  for (; end < header.size(); ++end) {
    const char c = header[end];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth == 0 && (c == ',' || c == '}')) break;
  }
  return absl::StripAsciiWhitespace(header.substr(pos, end - pos));
}

absl::StatusOr<std::vector<int64_t>> ParseShape(absl::string_view text) {
  absl::string_view inner = text;
  if (!absl::ConsumePrefix(&inner, "(") || !absl::ConsumeSuffix(&inner, ")")) {
    return absl::InvalidArgumentError(absl::StrCat("npy shape '", text, "' is not a tuple"));
  }
  std::vector<int64_t> shape;
  for (absl::string_view part : absl::StrSplit(inner, ',', absl::SkipWhitespace())) {
    int64_t dim;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(part), &dim) || dim < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("npy shape '", text, "' has a bad dimension '", part, "'"));
    }
    shape.push_back(dim);
  }
  return shape;
}

uint32_t ReadLittle(absl::string_view bytes, size_t offset, size_t width) {
  uint32_t value = 0;
  for (size_t i = 0; i < width; ++i) {
    value |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[offset + i])) << (8 * i);
  }
  return value;
}

}  // namespace

size_t NpyDTypeSize(NpyDType dtype) { return dtype == NpyDType::kF4 ? 4 : 2; }

absl::string_view NpyDescr(NpyDType dtype) { return dtype == NpyDType::kF4 ? "<f4" : "<f2"; }

int64_t NpyArray::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

absl::StatusOr<NpyArray> ParseNpy(absl::string_view bytes) {
  if (bytes.size() < 10 || !absl::StartsWith(bytes, kMagic)) {
    return absl::InvalidArgumentError("not a .npy file (missing \\x93NUMPY magic)");
  }
  const int major = static_cast<unsigned char>(bytes[6]);
  const int minor = static_cast<unsigned char>(bytes[7]);
  size_t header_len;
  size_t header_start;
  if (major == 1) {
    header_len = ReadLittle(bytes, 8, 2);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return absl::InvalidArgumentError("npy file truncated in its header");
    header_len = ReadLittle(bytes, 8, 4);
    header_start = 12;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("npy format version ", major, ".", minor, " is not 1.0, 2.0 or 3.0"));
  }
  if (bytes.size() < header_start + header_len) {
    return absl::InvalidArgumentError(absl::StrCat(
        "npy header claims ", header_len, " bytes but the file has ", bytes.size() - header_start));
  }
  const absl::string_view header = bytes.substr(header_start, header_len);

  absl::StatusOr<absl::string_view> descr = DictValue(header, "descr");
  if (!descr.ok()) return descr.status();
  NpyArray array;
  if (*descr == "'<f4'") {
    array.dtype = NpyDType::kF4;
  } else if (*descr == "'<f2'") {
    array.dtype = NpyDType::kF2;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "npy dtype ", *descr, " is not supported; use '<f4' (float32) or '<f2' (float16)"));
  }
  absl::StatusOr<absl::string_view> fortran = DictValue(header, "fortran_order");
  if (!fortran.ok()) return fortran.status();
  if (*fortran == "True") {
    return absl::InvalidArgumentError(
        "npy array is in Fortran order; save it C-ordered (numpy.ascontiguousarray)");
  }
  if (*fortran != "False") {
    return absl::InvalidArgumentError(absl::StrCat("npy fortran_order is '", *fortran, "'"));
  }
  absl::StatusOr<absl::string_view> shape_text = DictValue(header, "shape");
  if (!shape_text.ok()) return shape_text.status();
  absl::StatusOr<std::vector<int64_t>> shape = ParseShape(*shape_text);
  if (!shape.ok()) return shape.status();
  array.shape = *std::move(shape);

  const absl::string_view payload = bytes.substr(header_start + header_len);
  const size_t expected = static_cast<size_t>(array.elements()) * NpyDTypeSize(array.dtype);
  if (payload.size() != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        "npy data of shape (", absl::StrJoin(array.shape, ", "), ") and dtype ",
        NpyDescr(array.dtype), " needs ", expected, " bytes, file has ", payload.size()));
  }
  array.data.assign(payload.data(), payload.size());
  return array;
}

absl::StatusOr<std::string> SerializeNpy(const NpyArray& array) {
  const size_t expected = static_cast<size_t>(array.elements()) * NpyDTypeSize(array.dtype);
  if (array.data.size() != expected) {
    return absl::InvalidArgumentError(absl::StrCat("npy array of shape (",
                                                   absl::StrJoin(array.shape, ", "), ") needs ",
                                                   expected, " bytes, has ", array.data.size()));
  }
  std::string shape = absl::StrJoin(array.shape, ", ");
  if (array.shape.size() == 1) shape += ",";
  std::string header = absl::StrCat("{'descr': '", NpyDescr(array.dtype),
                                    "', 'fortran_order': False, 'shape': (", shape, "), }");
  // Pad with spaces so magic + version + length + header + '\n' is a multiple
  // of 64 bytes.
  const bool v2 = header.size() + 1 + 10 > 65535;
  const size_t prefix = v2 ? 12 : 10;
  const size_t total = (prefix + header.size() + 1 + 63) / 64 * 64;
  header.append(total - prefix - header.size() - 1, ' ');
  header.push_back('\n');
  std::string out(kMagic);
  out.push_back(static_cast<char>(v2 ? 2 : 1));
  out.push_back(0);
  const uint32_t len = static_cast<uint32_t>(header.size());
  for (size_t i = 0; i < (v2 ? 4u : 2u); ++i) out.push_back(static_cast<char>(len >> (8 * i)));
  out += header;
  out += array.data;
  return out;
}

absl::StatusOr<NpyArray> ReadNpy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open '", path, "' for reading"));
  std::stringstream bytes;
  bytes << in.rdbuf();
  absl::StatusOr<NpyArray> array = ParseNpy(bytes.str());
  if (!array.ok()) {
    return absl::Status(array.status().code(), absl::StrCat(path, ": ", array.status().message()));
  }
  return array;
}

absl::Status WriteNpy(const std::string& path, const NpyArray& array) {
  absl::StatusOr<std::string> bytes = SerializeNpy(array);
  if (!bytes.ok()) return bytes.status();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    return absl::PermissionDeniedError(absl::StrCat("cannot open '", path, "' for writing"));
  out.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("writing '", path, "' failed"));
  return absl::OkStatus();
}

NpyArray MakeF4(std::vector<int64_t> shape, const std::vector<float>& values) {
  NpyArray array;
  array.dtype = NpyDType::kF4;
  array.shape = std::move(shape);
  array.data.resize(values.size() * 4);
  std::memcpy(array.data.data(), values.data(), array.data.size());
  return array;
}

}  // namespace normserve::npy
