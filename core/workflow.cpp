#include "core/workflow.hpp"

#include "core/user_regex.hpp"
#include "util/atomic_file.hpp"
#include "reports/writers.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace mpscheck {

namespace {
std::vector<std::string> split_ws(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, sep);) out.push_back(part);
  return out;
}

bool target_matches(const std::string& wanted, const std::string& target) {
  if (wanted == target) return true;
  return wanted.find(':') == std::string::npos && target.rfind(wanted, 0) == 0 &&
         (target.size() == wanted.size() || target[wanted.size()] == ':');
}
}  // namespace

int compare_versions(const std::string& a, const std::string& b) {
  const auto pa = split(a, '.'), pb = split(b, '.');
  for (size_t i = 0; i < std::max(pa.size(), pb.size()); ++i) {
    auto num = [](const std::vector<std::string>& p, size_t i) {
      if (i >= p.size()) return 0L;
      try {
        return std::stol(p[i]);
      } catch (...) {
        return 0L;
      }
    };
    const long x = num(pa, i), y = num(pb, i);
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

namespace {

// One line of an expectations file as it is read: each error names the file, the line, the line's
// text and the format.
struct ExpectationLine {
  const std::string& file_name;
  int n;
  const std::string& raw;

  ExpectationError fail(const std::string& what) const {
    return ExpectationError(
        fmt::format("{}:{}: {} (line: '{}'); the format is PATTERN STATUS[|STATUS] "
                    "[target=T] [torch>=X] [torch<X] [os=TEXT] [os>=X] [os<X] [chip=TEXT] "
                    "[gpu=TEXT] [tier=NAME] [cause=CAUSE] [max_abs<=X] [max_rel<=X] "
                    "[count<=N] [outputs=NAME,...] [# reason]",
                    file_name, n, what, raw));
  }
  // A bound's number: finite and not negative (a whole number for a count).
  double bound(const std::string& w, std::size_t skip, bool whole = false) const {
    const std::string text = w.substr(skip);
    std::size_t used = 0;
    double v = -1;
    try {
      v = std::stod(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != text.size() || !std::isfinite(v) || v < 0 || (whole && v != std::floor(v)))
      throw fail(fmt::format("'{}' needs a {} after '{}'", w, whole ? "whole number" : "number", w.substr(0, skip)));
    return v;
  }
  // A key's text: not empty.
  std::string value(const std::string& w, std::size_t skip) const {
    if (w.size() == skip) throw fail(fmt::format("'{}' needs a value", w));
    return w.substr(skip);
  }
  // A version: numbers separated by dots (15, 14.4, 26.0.1).
  std::string version(const std::string& w, std::size_t skip) const {
    const std::string v = w.substr(skip);
    const bool ok = !v.empty() && v.front() != '.' && v.back() != '.' && v.find("..") == std::string::npos &&
                    v.find_first_not_of("0123456789.") == std::string::npos;
    if (!ok)
      throw fail(fmt::format("'{}' needs a version after '{}' (numbers and dots, e.g. 14.4)", w, w.substr(0, skip)));
    return v;
  }
  // The second word: failure statuses separated by |, or * for any.
  void read_statuses(const std::string& word, Expectation& e) const {
    if (word == "*") return;
    for (const auto& st : split(word, '|')) {
      Status s;
      try {
        s = status_from_string(st);
      } catch (const std::invalid_argument&) {
        throw fail(fmt::format(
            "unknown status '{}' (use mismatch, nan, unsupported, fallback, memory, error, crash, timeout or *)", st));
      }
      if (!is_finding(s)) throw fail(fmt::format("'{}' is not a failure status", st));
      e.statuses.push_back(st);
    }
  }
  // One condition after the status.
  void read_condition(const std::string& w, Expectation& e) const {
    if (w.rfind("target=", 0) == 0)
      e.target = w.substr(7);
    else if (w.rfind("os=", 0) == 0)
      e.os = w.substr(3);
    else if (w.rfind("torch>=", 0) == 0)
      e.torch_min = w.substr(7);
    else if (w.rfind("torch<", 0) == 0)
      e.torch_below = w.substr(6);
    else if (w.rfind("os>=", 0) == 0)
      e.os_min = version(w, 4);
    else if (w.rfind("os<", 0) == 0)
      e.os_below = version(w, 3);
    else if (w.rfind("chip=", 0) == 0)
      e.chip = value(w, 5);
    else if (w.rfind("gpu=", 0) == 0)
      e.gpu = value(w, 4);
    else if (w.rfind("tier=", 0) == 0)
      e.tier = value(w, 5);
    else if (w.rfind("cause=", 0) == 0)
      e.cause = value(w, 6);
    else if (w.rfind("max_abs<=", 0) == 0)
      e.max_abs = bound(w, 9);
    else if (w.rfind("max_rel<=", 0) == 0)
      e.max_rel = bound(w, 9);
    else if (w.rfind("count<=", 0) == 0)
      e.count = static_cast<std::int64_t>(bound(w, 7, true));
    else if (w.rfind("outputs=", 0) == 0)
      e.outputs = split(value(w, 8), ','), e.has_outputs = true;
    else
      throw fail(fmt::format("unknown condition '{}'", w));
  }
  // cause=: a known cause, and every status named is one of its.
  void check_cause(const Expectation& e) const {
    if (e.cause.empty()) return;
    static const std::map<std::string, std::vector<std::string>> kCauses{{"unimplemented", {"unsupported", "fallback"}},
                                                                         {"accuracy", {"mismatch", "nan"}},
                                                                         {"crash", {"crash", "timeout", "error"}},
                                                                         {"performance", {}},
                                                                         {"memory", {"memory"}}};
    const auto cause = kCauses.find(e.cause);
    if (cause == kCauses.end())
      throw fail(
          fmt::format("unknown cause '{}' (use unimplemented, accuracy, crash, memory or performance)", e.cause));
    for (const auto& st : e.statuses)
      if (std::find(cause->second.begin(), cause->second.end(), st) == cause->second.end())
        throw fail(fmt::format("status '{}' is never of cause '{}'{}", st, e.cause,
                               e.cause == "performance" ? " (a performance line takes * as its status)" : ""));
  }
};

}  // namespace

std::vector<Expectation> parse_expectations(const std::string& text, const std::string& file_name) {
  std::vector<Expectation> out;
  std::istringstream in(text);
  int n = 0;
  for (std::string raw; std::getline(in, raw);) {
    ++n;
    std::string line = raw, reason;
    if (const auto hash = line.find(" #"); hash != std::string::npos) {
      reason = line.substr(hash + 2);
      line.erase(hash);
    }
    const auto words = split_ws(line);
    if (words.empty() || words[0][0] == '#') continue;
    const ExpectationLine at{file_name, n, raw};
    if (words.size() < 2) throw at.fail("a pattern needs a status after it");
    Expectation e;
    e.line = n;
    e.pattern_text = words[0];
    try {
      e.pattern = user_regex(words[0]);
    } catch (const std::regex_error& err) {
      throw at.fail(fmt::format("'{}' is not a valid regular expression", words[0]));
    }
    at.read_statuses(words[1], e);
    for (size_t i = 2; i < words.size(); ++i) at.read_condition(words[i], e);
    at.check_cause(e);
    e.reason = reason;
    while (!e.reason.empty() && e.reason.front() == ' ') e.reason.erase(0, 1);
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<Expectation> load_expectations(const std::string& path) {
  if (const std::string why = not_a_file_reason(path); !why.empty())
    throw ExpectationError(fmt::format("cannot read the expectations file {}: {}", path, why));
  std::ifstream in(path);
  if (!in) throw ExpectationError(fmt::format("cannot read the expectations file {}", path));
  std::stringstream s;
  s << in.rdbuf();
  return parse_expectations(s.str(), path);
}

namespace {
// The first figure of `c` beyond a bound of `e`, said as "max_abs 3.2 > 0.01"; empty when none is.
std::string exceeded_bound(const Expectation& e, const CaseResult& c) {
  const bool figure_bound = e.max_abs >= 0 || e.max_rel >= 0 || e.count >= 0;
  if (figure_bound) {
    for (const auto& o : c.outputs) {
      if (!o.differs.empty())
        return fmt::format("{}: {} (no bound covers an output the two sides cannot compare)", o.name, o.note);
      if (!o.ok && o.nonfinite_mismatches > 0)
        return fmt::format("{}: {} non-finite element(s) differ (no bound covers them)", o.name,
                           o.nonfinite_mismatches);
    }
  }
  if (e.has_outputs) {
    std::vector<std::string> failing;
    for (const auto& o : c.outputs)
      if (!o.ok) failing.push_back(o.name);
    std::vector<std::string> expected = e.outputs;
    std::sort(failing.begin(), failing.end());
    std::sort(expected.begin(), expected.end());
    if (failing != expected)
      return fmt::format("failing outputs {} are not the expected {}",
                         failing.empty() ? "(none)" : fmt::format("{}", fmt::join(failing, ",")),
                         fmt::format("{}", fmt::join(expected, ",")));
  }
  std::int64_t count = 0;
  for (const auto& o : c.outputs) count += o.mismatches;
  const double max_abs = max_abs_error(c), max_rel = max_rel_error(c);
  // A NaN figure is beyond any bound, as an infinite one is.
  if (e.max_abs >= 0 && !(max_abs <= e.max_abs)) return fmt::format("max_abs {:.3g} > {:.3g}", max_abs, e.max_abs);
  if (e.max_rel >= 0 && !(max_rel <= e.max_rel)) return fmt::format("max_rel {:.3g} > {:.3g}", max_rel, e.max_rel);
  if (e.count >= 0 && count > e.count) return fmt::format("count {} > {}", count, e.count);
  return {};
}
}  // namespace

std::string cause_of(const CaseResult& c) {
  switch (c.status) {
    case Status::Unsupported:
    case Status::Fallback: return "unimplemented";
    case Status::Mismatch:
    case Status::Nan: return "accuracy";
    case Status::Crash:
    case Status::Timeout:
    case Status::Error: return "crash";
    case Status::Memory: return "memory";
    case Status::Pass: return c.speed_class == SpeedClass::Slower ? "performance" : "";
    default: return "";
  }
}

std::string os_version_of(const nlohmann::json& environment) {
  if (const auto v = environment.find("os_version");
      v != environment.end() && v->is_string() && !v->get<std::string>().empty())
    return v->get<std::string>();
  const std::string os = environment.value("os", "");
  const auto start = os.find_first_of("0123456789");
  if (start == std::string::npos) return {};
  return os.substr(start, os.find_first_not_of("0123456789.", start) - start);
}

namespace {
// `part` anywhere in `whole`, in any case.
bool contains_text(std::string whole, std::string part) {
  auto lower = [](std::string& s) {
    for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  };
  lower(whole);
  lower(part);
  return whole.find(part) != std::string::npos;
}

std::string env_text(const nlohmann::json& env, const char* key) {
  const auto it = env.find(key);
  return it != env.end() && it->is_string() ? it->get<std::string>() : std::string();
}
}  // namespace

void apply_expectations(const std::vector<Expectation>& expectations, const nlohmann::json& environment,
                        const std::string& target, std::vector<CaseResult>& cases) {
  const std::string torch = environment.value("torch_version", "");
  const std::string os = environment.value("os", "");
  const std::string os_version = os_version_of(environment);
  const std::string chip =
      env_text(environment, "chip").empty() ? env_text(environment, "cpu") : env_text(environment, "chip");
  const std::string gpu = env_text(environment, "gpu_family");
  const std::string tier = env_text(environment, "tier").empty() ? "native" : env_text(environment, "tier");
  for (auto& c : cases) {
    c.expected = c.unexpected_pass = false;
    c.expectation.clear();
    const std::string cause = cause_of(c);
    for (const auto& e : expectations) {
      if (!std::regex_match(c.id, e.pattern)) continue;
      if (!e.target.empty() && !target_matches(e.target, target)) continue;
      if (!e.os.empty() && os.find(e.os) == std::string::npos) continue;
      if (!e.torch_min.empty() && compare_versions(torch, e.torch_min) < 0) continue;
      if (!e.torch_below.empty() && compare_versions(torch, e.torch_below) >= 0) continue;
      // An OS range never applies where the OS version is unknown.
      if (!e.os_min.empty() && (os_version.empty() || compare_versions(os_version, e.os_min) < 0)) continue;
      if (!e.os_below.empty() && (os_version.empty() || compare_versions(os_version, e.os_below) >= 0)) continue;
      if (!e.chip.empty() && !contains_text(chip, e.chip)) continue;
      if (!e.gpu.empty() && (gpu.empty() || !contains_text(gpu, e.gpu))) continue;
      if (!e.tier.empty() && e.tier != tier) continue;
      const std::string why = fmt::format("line {}{}{}", e.line, e.reason.empty() ? "" : ": ", e.reason);
      if (e.cause == "performance") {
        // Known slow: expected while the timed case stays slower; listed but no longer slower, the
        // line should go. A case this run did not time says nothing either way.
        if (c.status != Status::Pass || !c.timed || !c.target_time) continue;
        if (cause == "performance") {
          c.expected = true;
          c.expectation = "expected (" + why + ")";
        } else {
          c.unexpected_pass = true;
          c.expectation = "listed as slower (" + why + ") but is no longer slower: remove the line";
        }
        break;
      }
      if (!e.cause.empty() && c.status != Status::Pass && e.cause != cause) continue;
      if (c.status == Status::Pass) {
        c.unexpected_pass = true;
        c.expectation = "listed as a known failure (" + why + ") but passes now: remove the line";
      } else if (is_finding(c.status) && (e.statuses.empty() || std::find(e.statuses.begin(), e.statuses.end(),
                                                                          to_string(c.status)) != e.statuses.end())) {
        if (const std::string worse = exceeded_bound(e, c); !worse.empty()) {
          c.expectation = "worse than its expected bound (" + why + "): " + worse;
          break;
        }
        c.expected = true;
        c.expectation = "expected (" + why + ")";
      } else {
        continue;
      }
      break;
    }
  }
}

namespace {

// A regex matching exactly `id`.
std::string exact_pattern(const std::string& id) {
  std::string out = "^";
  for (char ch : id) {
    if (std::strchr(".[]{}()\\*+?^$|", ch)) out += '\\';
    out += ch;
  }
  return out + "$";
}

// Twice `v`, rounded up to two significant digits: a bound with room for noise that a finding
// ten times worse still passes.
std::string bound_above(double v) {
  const double twice = 2 * v;
  const double step = std::pow(10.0, std::floor(std::log10(twice)) - 1);
  return fmt::format("{:.3g}", std::ceil(twice / step - 1e-9) * step);
}

std::string one_line(const std::string& text, size_t limit) {
  std::string out;
  for (char ch : text) {
    const bool space = ch == '\n' || ch == '\r' || ch == '\t' || ch == ' ';
    if (space && (out.empty() || out.back() == ' ')) continue;
    out += space ? ' ' : ch;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out.size() > limit ? out.substr(0, limit) + "..." : out;
}

// The finding in a few words: the missing kernel, the output and figures and which side float64
// blames, or the message.
std::string finding_reason(const CaseResult& c) {
  const std::string msg = one_line(c.message, 400);
  static const std::regex kernel(R"re("?([\w:]+)"? not implemented for '(\w+)')re");
  std::smatch m;
  if (c.status == Status::Unsupported && std::regex_search(msg, m, kernel))
    return fmt::format("no {} {} kernel for {}", c.target, m[2].str(), m[1].str());
  if ((c.status == Status::Mismatch || c.status == Status::Nan) && !c.outputs.empty()) {
    const OutputReport* worst = nullptr;
    for (const auto& o : c.outputs)
      if (!o.ok && (!worst || o.mismatches > worst->mismatches)) worst = &o;
    if (worst) {
      const std::int64_t new_non_finite =
          worst->nan_target + worst->inf_target - worst->nan_reference - worst->inf_reference;
      std::string r = new_non_finite > 0
                          ? fmt::format("{}: {} NaN/Inf where the reference is finite", worst->name, new_non_finite)
                          : fmt::format("{}: {} of {} elements off, max abs error {:.3g}", worst->name,
                                        worst->mismatches, worst->numel, worst->max_abs);
      if (c.attribution == Fragile::Target)
        r += "; against float64 the target is the wrong side";
      else if (c.attribution == Fragile::Float32)
        r += "; against float64 float32 is the fragile side";
      else if (c.attribution == Fragile::Dtype)
        r += "; the CPU's own " + c.dtype + " run breaks the same way";
      if (!c.first_diverging_layer.empty()) r += "; first diverging layer " + c.first_diverging_layer;
      return r;
    }
  }
  return fmt::format("{}: {}", to_string(c.status), one_line(c.message, 160));
}

}  // namespace

std::string expectations_from_report(const RunReport& report, const std::string& report_name) {
  const nlohmann::json& env = report.environment;
  const std::string target = report.run.value("target", env_text(env, "target"));
  const std::string torch = env_text(env, "torch_version");
  const auto parts = split(torch, '.');
  std::string keys = target.empty() ? "" : "target=" + target;
  if (parts.size() >= 2) {
    long minor = 0;
    try {
      minor = std::stol(parts[1]);
    } catch (...) {
    }
    keys += fmt::format("  torch>={}.{} torch<{}.{}", parts[0], parts[1], parts[0], minor + 1);
  }
  // Keyed to the OS family, and on macOS to its major version: the same finding on another macOS
  // major is a line of its own (runner images differ between macos-15 and macos-26).
  const std::string os = env_text(env, "os");
  const std::string os_version = os_version_of(env);
  if (os.find("macOS") != std::string::npos) {
    keys += "  os=macOS";
    const auto major = split(os_version, '.');
    if (!major.empty() && !major[0].empty()) {
      long m = 0;
      try {
        m = std::stol(major[0]);
        keys += fmt::format(" os>={} os<{}", m, m + 1);
      } catch (...) {
      }
    }
  } else if (os.find("Linux") != std::string::npos) {
    keys += "  os=Linux";
  }
  std::vector<const CaseResult*> findings;
  for (const auto& c : report.cases)
    if (is_finding(c.status)) findings.push_back(&c);
  std::sort(findings.begin(), findings.end(), [](const auto* a, const auto* b) { return a->id < b->id; });
  std::string out;
  out += fmt::format("# Known findings of --target {} on LibTorch {} ({}), {}.\n", target.empty() ? "?" : target,
                     torch.empty() ? "?" : torch, one_line(env_text(env, "torch_build"), 120),
                     os.empty() ? "OS unknown" : os);
  out += fmt::format(
      "# Drafted by `mpscheck expect --from {}`: {} line{}, one per finding. Review every line before\n"
      "# committing it: a listed finding no longer fails a run. Bounds are twice today's figures, and\n"
      "# outputs= names the outputs that fail, so a finding that gets worse or spreads fails again.\n",
      one_line(report_name, 200), findings.size(), findings.size() == 1 ? "" : "s");
  for (const CaseResult* c : findings) {
    std::string line = fmt::format("{}  {}  {}", exact_pattern(c->id), to_string(c->status), keys);
    if (const std::string cause = cause_of(*c); !cause.empty()) line += "  cause=" + cause;
    if (c->status == Status::Mismatch || c->status == Status::Nan) {
      std::int64_t count = 0;
      std::vector<std::string> failing;
      bool beyond_figures = false;  // a difference no figure measures exceeds every bound
      for (const auto& o : c->outputs) {
        count += o.mismatches;
        if (!o.ok) failing.push_back(o.name);
        beyond_figures = beyond_figures || (!o.ok && (!o.differs.empty() || o.nonfinite_mismatches > 0));
      }
      const double max_abs = max_abs_error(*c), max_rel = max_rel_error(*c);
      if (!beyond_figures) {
        if (std::isfinite(max_abs) && max_abs > 0) line += "  max_abs<=" + bound_above(max_abs);
        if (std::isfinite(max_rel) && max_rel > 0) line += " max_rel<=" + bound_above(max_rel);
        if (count > 0) line += fmt::format(" count<={}", count + (count + 3) / 4);
      }
      if (!failing.empty()) line += fmt::format(" outputs={}", fmt::join(failing, ","));
    }
    out += line + "  # " + finding_reason(*c) + "\n";
  }
  return out;
}

bool has_unexpected(const std::vector<CaseResult>& cases) {
  for (const auto& c : cases)
    if ((is_finding(c.status) && !c.expected) || c.unexpected_pass) return true;
  return false;
}

}  // namespace mpscheck
