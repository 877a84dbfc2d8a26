// Runs a program of this build (the CLI, the bench) and captures its output.
#ifndef NORMSERVE_TESTS_CLIENT_PROCESS_RUNNER_H_
#define NORMSERVE_TESTS_CLIENT_PROCESS_RUNNER_H_

#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <vector>

namespace normserve::client_test {

struct ProcessResult {
  int exit_code = -1;  // -1 when it did not exit normally
  std::string output;  // stdout and stderr interleaved
};

// Runs `binary args...` under a 60 s `timeout`, with stderr merged into
// stdout. Arguments must not contain single quotes.
inline ProcessResult RunProgram(const std::string& binary, const std::vector<std::string>& args) {
  std::string command = "timeout 60 '" + binary + "'";
  for (const std::string& arg : args) command += " '" + arg + "'";
  command += " 2>&1";
  ProcessResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) result.output.append(buffer, n);
  const int status = pclose(pipe);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  return result;
}

}  // namespace normserve::client_test

#endif  // NORMSERVE_TESTS_CLIENT_PROCESS_RUNNER_H_
