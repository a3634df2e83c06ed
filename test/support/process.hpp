// Running a program from a test: arguments, optional standard input, and what it printed and returned.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace moonmq::test {

struct process_result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

/// A file in a fresh temporary directory, removed with the object.
class temp_dir {
 public:
  temp_dir() {
    char tmpl[] = "/tmp/moonmq-test-XXXXXX";
    if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~temp_dir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  const std::string& path() const { return path_; }
  std::string write(const std::string& name, const std::string& content) const {
    std::string p = path_ + "/" + name;
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }

 private:
  std::string path_;
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Runs `argv` to completion, feeding `input` to its standard input.
inline process_result run_process(const std::vector<std::string>& argv, const std::string& input = "") {
  temp_dir dir;
  std::string in_path = dir.write("stdin", input);
  std::string out_path = dir.path() + "/stdout", err_path = dir.path() + "/stderr";
  std::fflush(nullptr);  // a child would write the runner's unflushed output again
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    if (!freopen(in_path.c_str(), "r", stdin) || !freopen(out_path.c_str(), "w", stdout) ||
        !freopen(err_path.c_str(), "w", stderr))
      _exit(127);
    closefrom(3);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  process_result r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out_path);
  r.err = slurp(err_path);
  return r;
}

}  // namespace moonmq::test
