#include "reports/version.hpp"

#include <mpscheck/dtype_names.hpp>
#include "reports/reporter.hpp"
#include "checks/memory.hpp"
#include "reports/escape.hpp"
#include "reports/writers.hpp"

#include "checks/recommend.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace mpscheck {

namespace {

constexpr std::size_t kChartCasesMax = 40;    // above this the speed chart shows families, not cases
constexpr std::size_t kErrorRowsMax = 50;     // rows of the error chart
constexpr std::size_t kCellCasesListed = 12;  // case ids listed in one coverage tooltip

constexpr const char* kStyle = R"css(
:root{--pass:#2e7d32;--fallback:#6d4c41;--skip:#9e9e9e;--unsupported:#f9a825;--error:#ef6c00;--mismatch:#d32f2f;--nan:#ad1457;
--timeout:#6d4c41;--crash:#4a148c;--faster:#2e7d32;--slower:#c62828;--similar:#90a4ae;--ink:#1f2328;--muted:#59636e;
--line:#d0d7de;--bg:#f6f8fa}
*{box-sizing:border-box}
body{font:14px/1.45 -apple-system,BlinkMacSystemFont,"Segoe UI",Helvetica,Arial,sans-serif;color:var(--ink);
margin:0;padding:24px 32px;max-width:1400px}
h1{font-size:24px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}
.sub{color:var(--muted);margin:0 0 12px}.note{color:var(--muted);font-size:13px}
table{border-collapse:collapse;margin:6px 0}th,td{border:1px solid var(--line);padding:4px 8px;text-align:left;
vertical-align:top}th{background:var(--bg)}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.id{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px;white-space:nowrap}
table.env th{width:160px;font-weight:600}table.env td{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12.5px;
word-break:break-all}
table.sortable th{cursor:pointer;user-select:none;white-space:nowrap}table.sortable th::after{content:" \2195";color:#aaa}
table.sortable th[aria-sort=ascending]::after{content:" \2191";color:var(--ink)}
table.sortable th[aria-sort=descending]::after{content:" \2193";color:var(--ink)}
.st{display:inline-block;padding:1px 7px;border-radius:10px;color:#fff;font-size:12px;font-weight:600}
.st.s-unsupported{color:#1f2328}
.s-pass{background:var(--pass)}.s-fallback{background:var(--fallback)}.s-skip{background:var(--skip)}.s-unsupported{background:var(--unsupported)}
.s-error{background:var(--error)}.s-mismatch{background:var(--mismatch)}.s-nan{background:var(--nan)}
.s-timeout{background:var(--timeout)}.s-crash{background:var(--crash)}.s-memory{background:#8250df}
span.tier{font-size:11px;border:1px solid #57606a;border-radius:6px;padding:0 5px;color:#57606a}
.totals{display:flex;flex-wrap:wrap;gap:8px}.totals .st{font-size:14px;padding:4px 12px;border-radius:6px}
details summary{cursor:pointer}details pre{white-space:pre-wrap;word-break:break-all;background:var(--bg);padding:6px;
margin:4px 0 0;font-size:12px}
svg{display:block;margin:8px 0;max-width:100%;height:auto}svg text{font:11px -apple-system,"Segoe UI",Helvetica,Arial,sans-serif;
fill:var(--ink)}svg .grid{stroke:#e5e8eb}svg .one{stroke:var(--ink);stroke-width:1.5}
svg .spread{stroke:#57606a;stroke-width:1;fill:none}svg .noclaim{fill:#57606a;font-style:italic}
svg .faster{fill:var(--faster)}svg .s-pass{fill:var(--pass)}svg .s-skip{fill:var(--skip)}
svg .s-unsupported{fill:var(--unsupported)}svg .s-fallback{fill:var(--fallback)}svg .s-error{fill:var(--error)}svg .s-mismatch{fill:var(--mismatch)}
svg .s-memory{fill:#8250df}svg .s-nan{fill:var(--nan)}svg .s-timeout{fill:var(--timeout)}svg .s-crash{fill:var(--crash)}svg .slower{fill:var(--slower)}svg .similar{fill:var(--similar)}
table.matrix td,table.matrix th{text-align:center;padding:3px 6px;font-size:12px}table.matrix th.op{text-align:left;
font-family:ui-monospace,Menlo,Consolas,monospace;font-weight:400}table.matrix td.cell{color:#fff;min-width:52px}
table.matrix td.cell.s-unsupported{color:#1f2328}table.matrix td.empty{color:#bbb}
details.group{border:1px solid var(--line,#d0d7de);border-radius:6px;padding:6px 10px;margin:8px 0}
details.group>summary{font-weight:600}p.answer{font-size:16px;font-weight:600}
.rec{padding:2px 8px;border-radius:6px;color:#fff}.r-0{background:var(--mismatch)}.r-1{background:#8250df}
.r-2{background:var(--pass)}.r-3{background:#57606a}.r-4{background:var(--skip)}#environment summary h2{display:inline}
.legend{display:flex;flex-wrap:wrap;gap:6px;margin:6px 0}
)css";

// Clicking a header sorts its table: by data-v when the cells carry one (numbers), else by text.
constexpr const char* kScript = R"js(
(function(){
function key(td){var v=td.getAttribute('data-v');return v===null?td.textContent.trim().toLowerCase():parseFloat(v);}
document.querySelectorAll('table.sortable').forEach(function(table){
  var heads=table.tHead.rows[0].cells;
  Array.prototype.forEach.call(heads,function(th,col){
    th.addEventListener('click',function(){
      var asc=th.getAttribute('aria-sort')!=='ascending';
      Array.prototype.forEach.call(heads,function(h){h.removeAttribute('aria-sort');});
      th.setAttribute('aria-sort',asc?'ascending':'descending');
      var body=table.tBodies[0],rows=Array.prototype.slice.call(body.rows);
      rows.sort(function(a,b){
        var x=key(a.cells[col]),y=key(b.cells[col]);
        var c=(typeof x==='number'&&typeof y==='number')?x-y:String(x).localeCompare(String(y));
        return asc?c:-c;});
      rows.forEach(function(r){body.appendChild(r);});
    });
  });
});
})();
)js";

const Status kStatusOrder[] = {Status::Crash,       Status::Timeout, Status::Nan,      Status::Mismatch, Status::Error,
                               Status::Unsupported, Status::Memory,  Status::Fallback, Status::Pass,     Status::Skip};

std::string status_pill(Status s) { return fmt::format(R"(<span class="st s-{0}">{0}</span>)", to_string(s)); }

std::string run_value(const RunReport& r, const char* key) {
  if (r.run.contains(key)) return json_value_text(r.run.at(key));
  if (r.environment.contains(key)) return json_value_text(r.environment.at(key));
  return "?";
}

// A log-scale axis over whole decades: position of v in [0, width].
struct LogAxis {
  double lo_exp, hi_exp, width;
  double x(double v) const {
    const double e = std::clamp(std::log10(v), lo_exp, hi_exp);
    return (e - lo_exp) / (hi_exp - lo_exp) * width;
  }
};

LogAxis decade_axis(double lo, double hi, double width, int min_decades) {
  double lo_exp = std::floor(std::log10(lo)), hi_exp = std::ceil(std::log10(hi));
  while (hi_exp - lo_exp < min_decades) {
    hi_exp += 1;
    if (hi_exp - lo_exp < min_decades) lo_exp -= 1;
  }
  return {lo_exp, hi_exp, width};
}

std::string decade_label(double e) {
  const double v = std::pow(10.0, e);
  if (e >= -3 && e <= 3) return fmt::format("{}", v);
  return fmt::format("1e{}", static_cast<int>(e));
}

// Shared by both charts: vertical grid lines with labels at each decade, above and below the rows.
std::string axis_svg(const LogAxis& axis, double x0, double top, double bottom, const char* suffix) {
  std::string s;
  for (double e = axis.lo_exp; e <= axis.hi_exp + 1e-9; e += 1) {
    const double x = x0 + axis.x(std::pow(10.0, e));
    s += fmt::format(R"(<line class="grid" x1="{0:.1f}" y1="{1:.1f}" x2="{0:.1f}" y2="{2:.1f}"/>)", x, top, bottom);
    s += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle">{}{}</text>)", x, top - 6, decade_label(e),
                     suffix);
    s += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="middle">{}{}</text>)", x, bottom + 14, decade_label(e),
                     suffix);
  }
  return s;
}

struct SpeedBar {
  std::string label, tooltip, css_class;
  double speedup;
  double min = 0, max = 0;  // spread of the cases behind a family bar; 0 for a single case
  bool no_claim = false;    // a case's ratio that the timing rule did not make a claim of
};

std::string speed_chart(const std::vector<SpeedBar>& bars) {
  constexpr double kWidth = 1100, kLabelW = 420, kRight = 70, kRowH = 18, kTop = 26;
  // At least one decade either side of 1x, so the 1x line never sits on an edge.
  double lo = 0.1, hi = 10;
  for (const auto& b : bars) {
    lo = std::min({lo, b.speedup, b.min > 0 ? b.min : lo});
    hi = std::max({hi, b.speedup, b.max});
  }
  const LogAxis axis = decade_axis(lo, hi, kWidth - kLabelW - kRight, 2);
  const double height = kTop + bars.size() * kRowH + 24;
  std::string s = fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{0}" height="{1:.0f}" viewBox="0 0 {0} {1:.0f}" role="img" aria-label="speedup per case, log scale">)",
      kWidth, height);
  s += axis_svg(axis, kLabelW, kTop, kTop + bars.size() * kRowH, "\u00d7");
  const double x1 = kLabelW + axis.x(1);
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const auto& b = bars[i];
    const double y = kTop + i * kRowH;
    const double xv = kLabelW + axis.x(b.speedup);
    s += fmt::format("<g><title>{}</title>", html_escape(b.tooltip));
    s += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="end">{}</text>)", kLabelW - 8, y + 13,
                     html_escape(shorten(b.label, 62)));
    s += fmt::format(R"(<rect class="{}" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}"/>)", b.css_class,
                     std::min(x1, xv), y + 3, std::max(std::abs(xv - x1), 1.5), kRowH - 6);
    double label_right = std::max(xv, x1), label_left = std::min(xv, x1);
    if (b.min > 0 && b.max > 0) {
      const double xa = kLabelW + axis.x(b.min), xb = kLabelW + axis.x(b.max), ym = y + kRowH / 2;
      s += fmt::format(
          R"(<path class="spread" d="M{0:.1f} {1:.1f}H{2:.1f}M{0:.1f} {3:.1f}V{4:.1f}M{2:.1f} {3:.1f}V{4:.1f}"/>)", xa,
          ym, xb, ym - 4, ym + 4);
      label_right = std::max(label_right, xb), label_left = std::min(label_left, xa);
    }
    // A slowdown's figure sits left of its bar unless it would run into the case names (about 7 px
    // a character); then it goes right of the 1x line, where that row has nothing.
    const std::string figure = format_speedup(b.speedup);
    const std::string suffix = b.no_claim ? ", not a claim" : "";
    const bool left = xv < x1 && label_left - 4 - 7.0 * (figure.size() + 1 + suffix.size()) > kLabelW;
    s += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="{}"{}>{}&#215;{}</text>)",
                     left ? label_left - 4 : label_right + 4, y + 13, left ? "end" : "start",
                     b.no_claim ? R"( class="noclaim")" : "", figure, suffix);
    s += "</g>";
  }
  s += fmt::format(R"(<line class="one" x1="{0:.1f}" y1="{1:.1f}" x2="{0:.1f}" y2="{2:.1f}"/>)", x1, kTop - 2,
                   kTop + bars.size() * kRowH + 2);
  s += "</svg>\n";
  return s;
}

std::string error_chart(const std::vector<const CaseResult*>& cases) {
  constexpr double kWidth = 1100, kLabelW = 420, kRight = 70, kRowH = 18, kTop = 26;
  double lo = 0, hi = 0;
  for (const auto* c : cases) {
    const double e = max_abs_error(*c);
    if (std::isfinite(e) && e > 0) lo = lo == 0 ? e : std::min(lo, e), hi = std::max(hi, e);
  }
  if (lo == 0) lo = 1e-8, hi = 1e-6;  // nothing positive: any small window will do
  const LogAxis axis = decade_axis(lo, hi, kWidth - kLabelW - kRight, 2);
  const double height = kTop + cases.size() * kRowH + 24;
  std::string s = fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" width="{0}" height="{1:.0f}" viewBox="0 0 {0} {1:.0f}" role="img" aria-label="max abs error per case, log scale">)",
      kWidth, height);
  s += axis_svg(axis, kLabelW, kTop, kTop + cases.size() * kRowH, "");
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const CaseResult& c = *cases[i];
    const double e = max_abs_error(c);
    const double y = kTop + i * kRowH;
    const bool finite = std::isfinite(e);
    const double xv = kLabelW + (e <= 0 ? 0 : finite ? axis.x(e) : axis.width);
    const std::string value = e == 0 ? "0 (exact)" : error_text(e);
    s += fmt::format("<g><title>{}: {}, max abs error {}, max rel error {}, atol {}</title>", html_escape(c.id),
                     to_string(c.status), value, error_text(max_rel_error(c)), format_figure(c.atol));
    s += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" text-anchor="end">{}</text>)", kLabelW - 8, y + 13,
                     html_escape(shorten(c.id, 62)));
    s += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" class="s-{}"/>)", kLabelW, y + 3,
                     std::max(xv - kLabelW, 2.0), kRowH - 6, to_string(c.status));
    s += fmt::format(R"(<text x="{:.1f}" y="{:.1f}">{}</text>)", xv + 4, y + 13, value);
    s += "</g>";
  }
  s += "</svg>\n";
  return s;
}

// Column order of the coverage matrix: the dtype table's order (the dtypes users migrate to first),
// then the rest by name.
int dtype_rank(const std::string& d) {
  int rank = 0;
  for (const DtypeSpelling& s : kDtypeSpellings) {
    if (d == s.id) return rank;
    ++rank;
  }
  return d == "-" ? 1000 : 100;
}

std::string coverage_matrix(const RunReport& report) {
  // (family/op, dtype) -> cases; ids follow op/<family>/<op>/<dtype>/<variant>...
  std::map<std::string, std::map<std::string, std::vector<const CaseResult*>>> cells;
  std::set<std::string> dtypes;
  for (const auto& c : report.cases) {
    if (c.id.rfind("op/", 0) != 0) continue;
    std::vector<std::string> parts;
    std::size_t start = 0;
    for (std::size_t slash; (slash = c.id.find('/', start)) != std::string::npos; start = slash + 1)
      parts.push_back(c.id.substr(start, slash - start));
    parts.push_back(c.id.substr(start));
    if (parts.size() < 3) continue;
    const std::string op = parts[1] + "/" + parts[2];
    const std::string dtype = parts.size() >= 4 ? parts[3] : "-";
    cells[op][dtype].push_back(&c);
    dtypes.insert(dtype);
  }
  if (cells.empty()) return "<p class=\"note\">No operator cases in this run.</p>\n";
  std::vector<std::string> columns(dtypes.begin(), dtypes.end());
  std::stable_sort(columns.begin(), columns.end(),
                   [](const std::string& a, const std::string& b) { return dtype_rank(a) < dtype_rank(b); });

  std::string s = "<table class=\"matrix\"><thead><tr><th>operator</th>";
  for (const auto& d : columns) s += fmt::format("<th>{}</th>", d == "-" ? "no dtype" : html_escape(d));
  s += "</tr></thead><tbody>\n";
  for (const auto& [op, row] : cells) {
    s += fmt::format("<tr><th class=\"op\">{}</th>", html_escape(op));
    for (const auto& d : columns) {
      const auto it = row.find(d);
      if (it == row.end()) {
        s += fmt::format(R"(<td class="empty" title="{} {}: not in this run">&#183;</td>)", html_escape(op),
                         html_escape(d));
        continue;
      }
      Status worst = Status::Skip;
      std::map<Status, int> n;
      for (const auto* c : it->second) {
        ++n[c->status];
        if (severity(c->status) > severity(worst)) worst = c->status;
      }
      std::string tip = fmt::format("{} {}: worst {}; {} case{}:", op, d, to_string(worst), it->second.size(),
                                    it->second.size() == 1 ? "" : "s");
      for (const Status st : kStatusOrder)
        if (n.count(st)) tip += fmt::format(" {} {}", n[st], to_string(st));
      for (std::size_t i = 0; i < it->second.size() && i < kCellCasesListed; ++i)
        tip += fmt::format("\n{}: {}", it->second[i]->id, to_string(it->second[i]->status));
      if (it->second.size() > kCellCasesListed)
        tip += fmt::format("\n... {} more", it->second.size() - kCellCasesListed);
      const int passed = n.count(Status::Pass) ? n[Status::Pass] : 0;
      s += fmt::format(R"(<td class="cell s-{}" title="{}">{} {}/{}</td>)", to_string(worst), html_escape(tip),
                       to_string(worst), passed, it->second.size());
    }
    s += "</tr>\n";
  }
  s += "</tbody></table>\n<div class=\"legend\">";
  for (const Status st : kStatusOrder) s += status_pill(st);
  s += "</div>\n<p class=\"note\">Each cell: the worst status over the variants of that operator and dtype "
       "(layouts, forward and backward), and how many of them passed. Hover a cell for the cases.</p>\n";
  return s;
}

std::string time_cell(const std::optional<TimingStats>& t) {
  if (!t || t->median_s <= 0) return R"(<td class="num" data-v="-1">-</td>)";
  return fmt::format(R"(<td class="num" data-v="{:.9g}">{}</td>)", t->median_s, format_seconds(t->median_s));
}

std::string figure_cell(double v) {
  if (v < 0) return R"(<td class="num" data-v="-1">-</td>)";
  // Non-finite sorts above every finite value.
  const double key = std::isfinite(v) ? v : 1e308;
  return fmt::format(R"(<td class="num" data-v="{:.9g}">{}</td>)", key, error_text(v));
}

// The recommendation per workload class, blocked classes first, and the totals by status.
std::string verdict_section(const RunReport& report, const std::map<Status, int>& counts) {
  std::string h = "<section id=\"verdict\">\n<h2>Verdict per workload class</h2>\n";
  const std::vector<RankedClass> rows = classes_blocked_first(report);
  int by_rank[5] = {0, 0, 0, 0, 0};
  for (const auto& c : rows) ++by_rank[c.rank];
  h += fmt::format(
      "<p class=\"answer\">{} workload class{} blocked, {} to reduce memory, {} to accelerate, {} to keep on "
      "the CPU.</p>\n",
      by_rank[0], by_rank[0] == 1 ? "" : "es", by_rank[1], by_rank[2], by_rank[3]);
  h += "<table class=\"sortable classes\"><thead><tr><th>workload class</th><th>recommendation</th>"
       "<th>accelerate</th><th>keep on CPU</th><th>blocked</th><th>reduce memory</th></tr></thead><tbody>\n";
  for (const auto& c : rows)
    h += fmt::format(
        "<tr><td class=\"id\">{}</td><td data-v=\"{}\"><span class=\"rec r-{}\">{}</span></td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "</tr>\n",
        html_escape(c.name), c.rank, c.rank, html_escape(c.summary.recommendation()), c.summary.accelerate,
        c.summary.keep_on_cpu, c.summary.blocked, c.summary.reduce_memory);
  h += "</tbody></table>\n<div class=\"totals\">";
  for (const Status st : kStatusOrder)
    if (counts.count(st)) h += fmt::format(R"(<span class="st s-{0}">{0}: {1}</span>)", to_string(st), counts.at(st));
  h += fmt::format("<span class=\"st s-skip\" style=\"background:#57606a\">total: {}</span></div>\n</section>\n",
                   report.cases.size());
  return h;
}

// One group per op (or model): its dtype x layout/direction matrix of statuses, then its findings,
// each expanding to its detail. The first groups are open; the rest are one click away.
std::string findings_section(const std::vector<OpGroup>& groups, std::size_t findings) {
  constexpr std::size_t kOpenGroups = 8;
  std::string h = fmt::format("<section id=\"findings\">\n<h2>Findings ({} in {} op{})</h2>\n", findings, groups.size(),
                              groups.size() == 1 ? "" : "s");
  if (groups.empty()) return h + "<p>None: every case passed or was skipped.</p>\n</section>\n";
  h += "<p class=\"note\">One group per op or model, the worst first. The matrix shows every case of the op in this "
       "run: a row per dtype, a column per layout and direction.</p>\n";
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const OpGroup& g = groups[i];
    h += fmt::format(
        "<details class=\"group\" data-op=\"{}\"{}><summary>{} <span class=\"id\">{}</span>: {} of {} "
        "case{} {}</summary>\n",
        html_escape(g.key), i < kOpenGroups ? " open" : "", status_pill(g.worst), html_escape(g.key), g.findings.size(),
        g.cases, g.cases == 1 ? "" : "s", g.findings.size() == 1 ? "is a finding" : "are findings");
    h += "<table class=\"matrix opmatrix\"><thead><tr><th></th>";
    for (const auto& col : g.columns) h += fmt::format("<th>{}</th>", html_escape(col));
    h += "</tr></thead><tbody>\n";
    for (const auto& row : g.rows) {
      h += fmt::format("<tr><th>{}</th>", html_escape(row));
      for (const auto& col : g.columns) {
        const auto it = g.cells.find({row, col});
        if (it == g.cells.end()) {
          h += "<td class=\"empty\">&#183;</td>";
          continue;
        }
        const CaseResult& c = *it->second;
        h +=
            fmt::format("<td class=\"cell s-{0}\" title=\"{1}: {0}\">{0}</td>", to_string(c.status), html_escape(c.id));
      }
      h += "</tr>\n";
    }
    h += "</tbody></table>\n<table class=\"findings\"><thead><tr><th>case</th><th>status</th><th>max abs error</th>"
         "<th>max rel error</th><th>message</th></tr></thead><tbody>\n";
    for (const CaseResult* c : g.findings) {
      h += fmt::format("<tr><td class=\"id\">{}</td><td>{}{}</td>", html_escape(c->id), status_pill(c->status),
                       c->tier.empty() ? "" : " <span class=\"tier\">" + html_escape(c->tier) + "</span>");
      h += figure_cell(max_abs_error(*c)) + figure_cell(max_rel_error(*c));
      h += fmt::format("<td><details><summary>{}</summary><pre>{}</pre></details></td></tr>\n",
                       html_escape(shorten(c->message.empty() ? "(no message)" : c->message, 160)),
                       html_escape(finding_detail(*c)));
    }
    h += "</tbody></table>\n</details>\n";
  }
  return h + "</section>\n";
}

// Findings by fingerprint (op, dtype, layout, status, error signature): one upstream report per
// row, known ones with their issue.
std::string fingerprint_section(const std::vector<FingerprintGroup>& groups) {
  if (groups.empty()) return {};
  std::string h =
      "<section id=\"fingerprints\">\n<h2>Findings by fingerprint</h2>\n<table class=\"sortable\"><thead><tr>"
      "<th>fingerprint</th><th>upstream</th><th>findings</th><th>cases</th></tr></thead><tbody>\n";
  for (const auto& g : groups) {
    std::string ids;
    for (const CaseResult* c : g.findings) ids += (ids.empty() ? "" : "<br>") + html_escape(c->id);
    h += fmt::format(
        "<tr><td class=\"id\">{}</td><td class=\"{}\">{}</td><td class=\"num\">{}</td><td class=\"id\">{}</td></tr>\n",
        html_escape(g.fingerprint.text()), g.known == "new" ? "new" : "known", html_escape(g.known), g.findings.size(),
        ids);
  }
  return h + "</tbody></table>\n</section>\n";
}

// The environment, last and folded; a multi-line value (ATen's parallel dump) behind its own disclosure.
std::string environment_section(const RunReport& report) {
  std::string h = fmt::format(
      "<section id=\"environment\">\n<details><summary><h2>Environment</h2></summary>\n"
      "<table class=\"env\">\n");
  auto row = [&](const std::string& key, const std::string& value) {
    const auto newline = value.find('\n');
    if (newline == std::string::npos) {
      h += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", html_escape(key), html_escape(value));
      return;
    }
    h += fmt::format("<tr><th>{}</th><td><details><summary>{}</summary><pre>{}</pre></details></td></tr>\n",
                     html_escape(key), html_escape(value.substr(0, newline)), html_escape(value));
  };
  for (const auto& key : environment_keys(report.environment)) row(key, json_value_text(report.environment.at(key)));
  if (report.run.contains("command")) row("command", json_value_text(report.run.at("command")));
  if (report.run.contains("wall_s") && report.run.at("wall_s").is_number())
    row("wall time", format_seconds(report.run.at("wall_s").get<double>()));
  return h + "</table>\n</details>\n</section>\n";
}

// Speed: chart per case (per family when there are many), then the table.
std::string speed_section(const RunReport& report) {
  std::string h;
  std::vector<const CaseResult*> timed;
  for (const auto& c : report.cases)
    if (c.speedup > 0 && std::isfinite(c.speedup)) timed.push_back(&c);
  std::stable_sort(timed.begin(), timed.end(), [](auto* a, auto* b) { return a->speedup > b->speedup; });
  h += fmt::format("<section id=\"speed\">\n<h2>Speed ({} timed cases)</h2>\n", timed.size());
  if (timed.empty()) {
    h += "<p class=\"note\">No case was timed.</p>\n";
  } else {
    std::vector<SpeedBar> bars;
    if (timed.size() <= kChartCasesMax) {
      for (const auto* c : timed)
        bars.push_back({c->id,
                        fmt::format("{}: {}x {} (reference {}, target {})", c->id, format_speedup(c->speedup),
                                    c->speed_class == SpeedClass::None ? "unclassified" : speed_text(*c),
                                    format_seconds(c->reference_time ? c->reference_time->median_s : 0),
                                    format_seconds(c->target_time ? c->target_time->median_s : 0)),
                        c->speed_class == SpeedClass::None ? "similar" : to_string(c->speed_class), c->speedup, 0, 0,
                        speed_text(*c).find("not a claim") != std::string::npos});
      h +=
          "<p class=\"note\">Speedup per case (reference median / target median), log scale; the dark line is 1&#215;. "
          "Green: faster, red: slower, grey: within the timing spread.</p>\n";
    } else {
      // Geometric mean per family: the average of ratios that does not favour the larger ones.
      struct Family {
        double log_sum = 0, min = 0, max = 0;
        int n = 0;
      };
      std::map<std::string, Family> families;
      for (const auto* c : timed) {
        auto& f = families[split_case_id(*c).suite];
        f.log_sum += std::log(c->speedup);
        f.min = f.n == 0 ? c->speedup : std::min(f.min, c->speedup);
        f.max = std::max(f.max, c->speedup);
        ++f.n;
      }
      for (const auto& [family, f] : families) {
        const double g = std::exp(f.log_sum / f.n);
        bars.push_back({fmt::format("{} ({} cases)", family, f.n),
                        fmt::format("{}: geometric mean {}x over {} timed cases, from {}x to {}x", family,
                                    format_speedup(g), f.n, format_speedup(f.min), format_speedup(f.max)),
                        g >= 1.1   ? "faster"
                        : g <= 0.9 ? "slower"
                                   : "similar",
                        g, f.min, f.max});
      }
      std::stable_sort(bars.begin(), bars.end(), [](const auto& a, const auto& b) { return a.speedup > b.speedup; });
      h += "<p class=\"note\">Geometric-mean speedup per family (reference / target), log scale; the dark line is "
           "1&#215;. "
           "Green: 1.1&#215; or more, red: 0.9&#215; or less; the whisker spans the slowest to the fastest case. "
           "Every case is in the table below.</p>\n";
    }
    h += speed_chart(bars);
    h += "<table class=\"sortable\"><thead><tr><th>case</th><th>status</th><th>speedup</th><th>class</th>"
         "<th>reference median</th><th>target median</th><th>noisy</th></tr></thead><tbody>\n";
    for (const auto* c : timed) {
      const bool noisy =
          (c->reference_time && c->reference_time->noisy()) || (c->target_time && c->target_time->noisy());
      h += fmt::format(
          R"(<tr><td class="id">{}</td><td data-v="{}">{}</td><td class="num" data-v="{:.9g}">{}&#215;</td><td>{}</td>)",
          html_escape(c->id), -severity(c->status), status_pill(c->status), c->speedup, format_speedup(c->speedup),
          html_escape(speed_text(*c)));
      h += time_cell(c->reference_time) + time_cell(c->target_time);
      h += fmt::format("<td>{}</td></tr>\n", noisy ? "noisy" : "");
    }
    h += "</tbody></table>\n";
  }
  h += "</section>\n";
  return h;
}

// Error magnitudes: findings with figures first, then the passing cases closest to failing.
std::string errors_section(const RunReport& report) {
  std::string h;
  std::vector<const CaseResult*> with_error, passing;
  for (const auto& c : report.cases)
    if (max_abs_error(c) >= 0) (is_finding(c.status) ? with_error : passing).push_back(&c);
  auto larger_error = [](const CaseResult* a, const CaseResult* b) { return max_abs_error(*a) > max_abs_error(*b); };
  std::stable_sort(with_error.begin(), with_error.end(), larger_error);
  std::stable_sort(passing.begin(), passing.end(), larger_error);
  const std::size_t total_with_figures = with_error.size() + passing.size();
  with_error.insert(with_error.end(), passing.begin(), passing.end());
  if (with_error.size() > kErrorRowsMax) with_error.resize(kErrorRowsMax);
  h += "<section id=\"errors\">\n<h2>Error magnitudes</h2>\n";
  if (with_error.empty()) {
    h += "<p class=\"note\">No case produced outputs to compare.</p>\n";
  } else {
    h += "<p class=\"note\">Largest absolute error against the reference over each case's outputs, log scale, coloured "
         "by "
         "status; failing cases first.";
    if (total_with_figures > with_error.size())
      h += fmt::format(" Showing {} of {} cases.", with_error.size(), total_with_figures);
    h += "</p>\n" + error_chart(with_error);
  }
  h += "</section>\n";
  return h;
}

// Every case, in run order.
std::string cases_section(const RunReport& report) {
  std::string h;
  h += "<section id=\"cases\">\n<h2>All cases</h2>\n<table class=\"sortable\"><thead><tr><th>case</th><th>status</th>"
       "<th>max abs error</th><th>speedup</th><th>wall time</th><th>peak "
       "memory</th><th>message</th></tr></thead><tbody>\n";
  for (const auto& c : report.cases) {
    h += fmt::format("<tr><td class=\"id\">{}</td><td data-v=\"{}\">{}</td>", html_escape(c.id), -severity(c.status),
                     status_pill(c.status));
    h += figure_cell(max_abs_error(c));
    h += c.speedup > 0
             ? fmt::format(R"(<td class="num" data-v="{:.9g}">{}&#215;</td>)", c.speedup, format_speedup(c.speedup))
             : std::string(R"(<td class="num" data-v="-1">-</td>)");
    h += fmt::format(R"(<td class="num" data-v="{:.9g}">{}</td>)", c.wall_s, format_seconds(c.wall_s));
    const std::int64_t peak = c.memory ? c.memory->peak_allocated : -1;
    h += fmt::format(R"(<td class="num" data-v="{}" title="{}">{}</td>)", peak,
                     c.memory ? html_escape(memory_text(*c.memory)) : std::string(), bytes_text(peak));
    h += fmt::format("<td>{}</td></tr>\n", html_escape(shorten(c.message, 160)));
  }
  h += "</tbody></table>\n</section>\n";
  return h;
}

}  // namespace

std::string render_html(const RunReport& report) {
  const auto counts = count_by_status(report.cases);
  const std::vector<const CaseResult*> findings = findings_worst_first(report);
  const std::string target = run_value(report, "target"), torch = run_value(report, "torch_version");

  std::string h =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  h += fmt::format("<title>mpscheck: {} findings, target {}</title>\n", findings.size(), html_escape(target));
  h += std::string("<style>") + kStyle + "</style>\n</head>\n<body>\n";

  // The answer first: what was run, the recommendation per workload class, the totals, then the
  // findings grouped by op. The environment comes last, folded.
  h +=
      fmt::format("<header>\n<h1>mpscheck report: target {}, torch {}</h1>\n", html_escape(target), html_escape(torch));
  h += fmt::format("<p class=\"sub\">{} cases, {} findings. Reference: CPU float32. Written by mpscheck {}.</p>\n",
                   report.cases.size(), findings.size(), kVersion);
  if (const std::string incomplete = incomplete_sentence(report); !incomplete.empty())
    h += fmt::format("<p class=\"note\"><b>{}.</b></p>\n", html_escape(incomplete));
  if (report.run.contains("dtypes") && report.run.at("dtypes").is_string())
    h += fmt::format("<p class=\"note\">{}.</p>\n", html_escape(report.run.at("dtypes").get<std::string>()));
  h += fmt::format(
      "<p class=\"tier\">Device tier: <b>{}</b>{}</p>\n", html_escape(tier_name(report.environment)),
      tier_sentence(report.environment).empty() ? "." : ". " + html_escape(tier_sentence(report.environment)) + ".");
  h += "</header>\n";
  h += verdict_section(report, counts);
  h += findings_section(findings_by_op(report), findings.size());
  h += fingerprint_section(findings_by_fingerprint(report.cases, report.known_issues));

  h += speed_section(report);
  h += errors_section(report);
  h += "<section id=\"coverage\">\n<h2>Coverage: operator &#215; dtype</h2>\n" + coverage_matrix(report) +
       "</section>\n";

  h += cases_section(report);
  h += environment_section(report);

  h += std::string("<script>") + kScript + "</script>\n</body>\n</html>\n";
  return h;
}

const Reporter& html_reporter() {
  static const Reporter reporter({.flag = "html", .help = "write a self-contained HTML report to FILE"}, render_html);
  return reporter;
}

}  // namespace mpscheck
