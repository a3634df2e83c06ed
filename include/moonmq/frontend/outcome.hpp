// The front ends answer core/outcome.hpp's outcome<T>: a value, or a refusal a client protocol encodes its own way.
#pragma once

#include "moonmq/core/outcome.hpp"

namespace moonmq::frontend {

using moonmq::done;
using moonmq::outcome;
using moonmq::refusal;

}  // namespace moonmq::frontend
