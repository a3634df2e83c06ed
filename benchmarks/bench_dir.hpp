// The directory a benchmark of files works in: its first argument, or a new one under /var/tmp.
#pragma once

#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
#include <string>

inline std::string bench_dir(int argc, char** argv, const char* bench) {
  if (argc > 1) return argv[1];
  char tmpl[] = "/var/tmp/moonmq-bench-XXXXXX";
  if (!mkdtemp(tmpl)) {
    std::fprintf(stderr, "%s: cannot make a directory under /var/tmp\n", bench);
    std::exit(1);
  }
  return tmpl;
}
