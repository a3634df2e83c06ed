// One libFuzzer binary per target: MOONMQ_FUZZ_TARGET names the function of targets.hpp it drives.
#include "targets/targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return moonmq::fuzz::MOONMQ_FUZZ_TARGET(data, size);
}
