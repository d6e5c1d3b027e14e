// Reading the CSV of KAI's time-based fairshare simulator (and `gantry simulate --kai-csv`) in
// tests: `Time,QueueID,Allocation,FairShare`, one row per queue per cycle.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <utility>

namespace gantry::kai_csv {

// Time -> queue -> (allocation, fair share). A wrong header fails the calling test.
using KaiRows = std::map<int, std::map<std::string, std::pair<double, double>>>;

inline KaiRows ParseKaiCsv(const std::string& csv) {
  KaiRows rows;
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "Time,QueueID,Allocation,FairShare");
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string t, q, a, s;
    std::getline(f, t, ',');
    std::getline(f, q, ',');
    std::getline(f, a, ',');
    std::getline(f, s, ',');
    rows[std::stoi(t)][q] = {std::stod(a), std::stod(s)};
  }
  return rows;
}

}  // namespace gantry::kai_csv
