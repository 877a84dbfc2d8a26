// Uses the installed client: builds a bf16 tensor and a client (no call).
#include <iostream>

#include "normserve/client/client.h"
#include "normserve/client/tensor.h"

int main() {
  const float values[] = {1.0f, -2.0f, 0.5f, 3.0f};
  auto tensor = normserve::client::MakeTensor(values, {2, 2}, normserve::v1::DTYPE_BF16);
  normserve::client::ClientOptions options;
  options.target = "127.0.0.1:1";
  auto client = normserve::client::Client::Connect(options);
  if (!tensor.ok() || !client.ok()) return 1;
  std::cout << "consumer ok: " << tensor->data().size() << " bytes\n";
  return 0;
}
