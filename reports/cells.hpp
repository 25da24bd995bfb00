// Drift across cells: the reports of one catalog run on several runners (two macOS images, two
// chips, two targets) side by side, each finding labelled by where it appears. `mpscheck merge
// --cells` builds it (core/workflow.cpp); this renders it as JSON and as one HTML page.
#pragma once

#include "checks/result.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace mpscheck {

// One runner's report: its name (NAME= on the command line, else its target) and what it ran on.
struct Cell {
  std::string name, file, target, os, cpu, torch;
};

// Where a case's finding appears:
//   "everywhere"     a finding in every cell that ran the case, and at least two did;
//   "cell-specific"  a finding in some cells and a pass in another (an OS, chip or dtype difference);
//   "new"            a finding in the one cell that ran it: nothing to compare it with yet;
//   ""               no finding anywhere.
struct CellCase {
  std::string id;
  std::vector<Status> statuses;  // per cell; Skip with ran[i] false where the cell did not run it
  std::vector<bool> ran;
  std::vector<std::string> messages;  // per cell, the finding's message (empty for a pass)
  std::string label;
};

struct CellMatrix {
  std::vector<Cell> cells;
  std::vector<CellCase> cases;  // by id
};

// Labels one case from its per-cell statuses (above).
std::string cell_label(const std::vector<Status>& statuses, const std::vector<bool>& ran);

nlohmann::json cells_to_json(const CellMatrix& m);
// One self-contained page: the counts per label, then a case x cell matrix of every case with a
// finding in some cell (the label first), every text escaped.
std::string render_cells_html(const CellMatrix& m);

}  // namespace mpscheck
