// history-check: the history checker as a command (test/checker/history.hpp says what it reads and reports).
//
//   history-check [FILE]     reads FILE (or standard input), prints the report as one JSON line
// Exit status: 0 no anomaly, 1 anomalies, 2 unreadable or malformed history.
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "checker/history.hpp"

int main(int argc, char** argv) {
  std::string text;
  if (argc > 1) {
    std::ifstream in(argv[1], std::ios::binary);
    if (!in) {
      std::cerr << "history-check: cannot read " << argv[1] << "\n";
      return 2;
    }
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  } else {
    std::ostringstream all;
    all << std::cin.rdbuf();
    text = all.str();
  }
  auto report = moonmq::check::check_history(text);
  if (!report) {
    std::cerr << "history-check: " << report.message() << "\n";
    return 2;
  }
  std::cout << report->to_json() << "\n";
  return report->anomalies.empty() ? 0 : 1;
}
