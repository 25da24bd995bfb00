#include "reports/cells.hpp"

#include "reports/escape.hpp"

#include <fmt/format.h>

#include <map>

namespace mpscheck {

std::string cell_label(const std::vector<Status>& statuses, const std::vector<bool>& ran) {
  int findings = 0, passes = 0;
  for (size_t i = 0; i < statuses.size(); ++i) {
    if (!ran[i]) continue;
    findings += is_finding(statuses[i]);
    passes += statuses[i] == Status::Pass;
  }
  if (findings == 0) return "";
  if (passes > 0) return "cell-specific";
  return findings >= 2 ? "everywhere" : "new";
}

nlohmann::json cells_to_json(const CellMatrix& m) {
  nlohmann::json j;
  j["schema"] = "mpscheck-cells/1";
  j["cells"] = nlohmann::json::array();
  for (const auto& c : m.cells)
    j["cells"].push_back({{"name", valid_utf8(c.name)},
                          {"file", valid_utf8(c.file)},
                          {"target", valid_utf8(c.target)},
                          {"os", valid_utf8(c.os)},
                          {"cpu", valid_utf8(c.cpu)},
                          {"torch_version", valid_utf8(c.torch)}});
  std::map<std::string, int> counts{{"everywhere", 0}, {"cell-specific", 0}, {"new", 0}};
  j["cases"] = nlohmann::json::array();
  for (const auto& c : m.cases) {
    nlohmann::json statuses = nlohmann::json::object();
    for (size_t i = 0; i < m.cells.size(); ++i)
      statuses[valid_utf8(m.cells[i].name)] = c.ran[i] ? nlohmann::json(to_string(c.statuses[i])) : nlohmann::json();
    nlohmann::json one{{"id", valid_utf8(c.id)}, {"statuses", statuses}};
    if (!c.label.empty()) {
      one["label"] = c.label;
      ++counts[c.label];
      nlohmann::json messages = nlohmann::json::object();
      for (size_t i = 0; i < m.cells.size(); ++i)
        if (c.ran[i] && !c.messages[i].empty()) messages[valid_utf8(m.cells[i].name)] = valid_utf8(c.messages[i]);
      one["messages"] = messages;
    }
    j["cases"].push_back(std::move(one));
  }
  j["labels"] = counts;
  return j;
}

std::string render_cells_html(const CellMatrix& m) {
  std::map<std::string, int> counts{{"everywhere", 0}, {"cell-specific", 0}, {"new", 0}};
  for (const auto& c : m.cases)
    if (!c.label.empty()) ++counts[c.label];
  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>mpscheck: findings across "
       "cells</title>\n"
       "<style>body{font:14px system-ui,sans-serif;margin:24px;color:#222}table{border-collapse:collapse}"
       "th,td{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}th{background:#f3f3f3}"
       "td.id{font-family:monospace}.st{padding:1px 6px;border-radius:4px;color:#fff;font-size:12px}"
       ".s-pass{background:#2e7d32}.s-skip,.s-none{background:#9e9e9e}.s-fallback{background:#6d4c41}"
       ".s-unsupported{background:#f9a825}.s-error{background:#ef6c00}.s-mismatch{background:#d32f2f}"
       ".s-nan{background:#ad1457}.s-crash{background:#4a148c}.s-timeout{background:#283593}"
       ".l-everywhere{background:#d32f2f}.l-cell-specific{background:#1565c0}.l-new{background:#6a1b9a}"
       ".label{padding:1px 6px;border-radius:4px;color:#fff}</style></head><body>\n";
  h += "<h1>Findings across cells</h1>\n<section id=\"cells\"><h2>Cells</h2><table><tr><th>cell</th><th>target</th>"
       "<th>OS</th><th>CPU</th><th>LibTorch</th><th>report</th></tr>\n";
  for (const auto& c : m.cells)
    h += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                     html_escape(c.name), html_escape(c.target), html_escape(c.os), html_escape(c.cpu),
                     html_escape(c.torch), html_escape(c.file));
  h += "</table></section>\n";
  h += fmt::format(
      "<section id=\"labels\"><h2>Where each finding appears</h2><p>"
      "<span class=\"label l-everywhere\">everywhere</span> {}: a finding in every cell that ran it. "
      "<span class=\"label l-cell-specific\">cell-specific</span> {}: a finding in some cells that passes in "
      "another. <span class=\"label l-new\">new</span> {}: a finding in the only cell that ran it.</p></section>\n",
      counts["everywhere"], counts["cell-specific"], counts["new"]);
  h += "<section id=\"matrix\"><h2>Case &times; cell</h2><table><thead><tr><th>case</th><th>where</th>";
  for (const auto& c : m.cells) h += "<th>" + html_escape(c.name) + "</th>";
  h += "</tr></thead><tbody>\n";
  // Cell-specific first: they are the drift this page is for; then new, then everywhere.
  for (const char* label : {"cell-specific", "new", "everywhere"}) {
    for (const auto& c : m.cases) {
      if (c.label != label) continue;
      h +=
          fmt::format("<tr data-label=\"{0}\"><td class=\"id\">{1}</td><td><span class=\"label l-{0}\">{0}</span></td>",
                      label, html_escape(c.id));
      for (size_t i = 0; i < m.cells.size(); ++i) {
        if (!c.ran[i]) {
          h += "<td><span class=\"st s-none\">not run</span></td>";
          continue;
        }
        const std::string st = to_string(c.statuses[i]);
        h += fmt::format("<td title=\"{}\"><span class=\"st s-{}\">{}</span></td>",
                         html_escape(shorten(c.messages[i], 300)), st, st);
      }
      h += "</tr>\n";
    }
  }
  h += "</tbody></table></section>\n</body></html>\n";
  return h;
}

}  // namespace mpscheck
