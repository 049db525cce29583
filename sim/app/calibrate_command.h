#pragma once
// `kvsim calibrate`: fits the calibrated latency model's coefficients on the operator tables of each
// GPU (models/latency/<gpu>/), reports the fit error per operator and writes the coefficients.
#include <ostream>
#include <string>
#include <vector>

namespace kvsim {

int run_calibrate_command(const std::vector<std::string>& args, std::ostream& out);

}  // namespace kvsim
