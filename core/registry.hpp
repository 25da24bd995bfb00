// Every workload from every plugin, by unique id; selection by kind and regex filters.
#pragma once

#include "core/plugin_host.hpp"

#include <map>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

namespace mpscheck {

struct DuplicateCaseId : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Case selection: kinds, then filters. A filter is a regex searched in the id; a leading '-'
// makes it exclude. With no positive filter every case of the chosen kinds is included.
struct Selection {
  bool ops = false;
  bool models = false;
  std::vector<std::string> filters;
  bool skip_large = false;  // --quick: leave out cases tagged "large" or "full-only" (beyond OpInfo's quick samples)
  bool huge = false;        // --huge: cases tagged "huge" too (no other selection takes them)
};

// Compiles filters; throws std::invalid_argument naming the bad pattern.
struct CaseFilter {
  explicit CaseFilter(const std::vector<std::string>& patterns);
  bool matches(const std::string& id) const;

 private:
  std::vector<std::regex> include_, exclude_;
};

class Registry {
 public:
  // Throws DuplicateCaseId naming both plugins.
  explicit Registry(const std::vector<RegisteredWorkload>& workloads);

  const RegisteredWorkload* find(const std::string& id) const;
  // Selected cases in id order.
  std::vector<RegisteredWorkload> select(const Selection& selection) const;
  size_t size() const { return by_id_.size(); }

 private:
  std::map<std::string, RegisteredWorkload> by_id_;
};

}  // namespace mpscheck
