# normserve_warnings(<target>): -Wall -Wextra on our own C++ sources only
# (never on generated protobuf code or on CUDA device code, which nvcc handles).
# Designated initializers leave fields at their defaults on purpose, hence
# -Wno-missing-field-initializers.
function(normserve_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers>)
endfunction()
