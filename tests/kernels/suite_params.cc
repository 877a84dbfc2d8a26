#include "suite_params.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace normserve::kernels_test {

std::vector<int64_t> SegmentRowsFor(int64_t hidden) {
  int64_t rows;
  if (hidden <= 7) {
    rows = 97;
  } else if (hidden <= 127) {
    rows = 600;
  } else if (hidden <= 1000) {
    rows = 70;
  } else if (hidden <= 4096) {
    rows = 5;
  } else if (hidden <= 8191) {
    rows = 3;
  } else {
    rows = 2;
  }
  const int64_t first = std::max<int64_t>(1, rows / 3);
  return {first, rows - first};
}

std::string SuiteParamName(
    const ::testing::TestParamInfo<std::tuple<std::string, kernels::DType, int64_t>>& info) {
  return absl::StrCat(std::get<0>(info.param), "_", kernels::DTypeName(std::get<1>(info.param)),
                      "_d", std::get<2>(info.param));
}

}  // namespace normserve::kernels_test
