#include "reports/fingerprint.hpp"

#include "reports/escape.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

namespace mpscheck {

namespace {

std::vector<std::string> words_of(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> w;
  for (std::string s; in >> s;) w.push_back(s);
  return w;
}

bool any_or(const std::string& pattern, const std::string& value) { return pattern == "*" || pattern == value; }

}  // namespace

std::string Fingerprint::text() const {
  std::string t = fmt::format("{} {} {} {}", op, dtype, layout, status);
  if (!signature.empty()) t += " " + signature;
  return t;
}

std::string error_signature(const std::string& message) {
  std::string out;
  for (std::size_t i = 0; i < message.size() && out.size() < 120;) {
    const unsigned char c = static_cast<unsigned char>(message[i]);
    if (c == '0' && i + 1 < message.size() && (message[i + 1] == 'x' || message[i + 1] == 'X')) {
      out += "0x#";
      i += 2;
      while (i < message.size() && std::isxdigit(static_cast<unsigned char>(message[i]))) ++i;
    } else if (std::isdigit(c) &&
               (i == 0 || !(std::isalnum(static_cast<unsigned char>(message[i - 1])) || message[i - 1] == '_'))) {
      out += '#';
      while (i < message.size() &&
             (std::isdigit(static_cast<unsigned char>(message[i])) || message[i] == '.' || message[i] == 'e' ||
              ((message[i] == '-' || message[i] == '+') && i > 0 && message[i - 1] == 'e')))
        ++i;
    } else {
      out += static_cast<char>(std::tolower(c));
      ++i;
    }
  }
  return valid_utf8(out);  // the cut at 120 bytes may split a character
}

Fingerprint fingerprint_of(const CaseResult& c) {
  Fingerprint fp;
  const auto p = id_parts(c.id);
  fp.status = to_string(c.status);
  if (p[0] == "op" && p.size() >= 5) {
    fp.op = p[0] + "/" + p[1] + "/" + p[2];
    fp.dtype = p[3];
    fp.layout = p[4];
  } else if (p[0] == "model" && p.size() >= 3) {
    fp.op = c.id.substr(0, c.id.rfind('/'));
    fp.dtype = "model";
    fp.layout = p.back();
  } else {
    fp.op = c.id;
    fp.dtype = fp.layout = "-";
  }
  // Numbers: the outputs that failed (a forward bug and a backward one are two bugs) and the layer.
  if (c.status == Status::Mismatch || c.status == Status::Nan) {
    std::vector<std::string> failing;
    for (const auto& o : c.outputs)
      if (!o.ok) failing.push_back(o.name);
    fp.signature = fmt::format("{}", fmt::join(failing, ","));
    if (!c.first_diverging_layer.empty()) fp.signature += " at " + c.first_diverging_layer;
  } else {
    fp.signature = error_signature(c.message);
  }
  return fp;
}

std::vector<KnownIssue> parse_known_issues(const std::string& text, const std::string& file_name) {
  std::vector<KnownIssue> out;
  std::istringstream in(text);
  int n = 0;
  for (std::string raw; std::getline(in, raw);) {
    ++n;
    std::string line = raw, note;
    if (const auto hash = line.find(" #"); hash != std::string::npos) note = line.substr(hash + 2), line.erase(hash);
    const auto w = words_of(line);
    if (w.empty() || w[0][0] == '#') continue;
    auto fail = [&](const std::string& what) {
      return KnownIssuesError(
          fmt::format("{}:{}: {} (line: '{}'); the format is OP DTYPE LAYOUT STATUS ISSUE "
                      "FIXED_IN BROKEN_IN [SIGNATURE] [# note]",
                      file_name, n, what, raw));
    };
    if (w.size() < 7) throw fail("a row needs seven fields");
    KnownIssue k;
    k.line = n;
    k.op = w[0], k.dtype = w[1], k.layout = w[2], k.status = w[3], k.issue = w[4];
    k.fixed_in = w[5] == "-" ? "" : w[5];
    k.broken_in = w[6] == "-" ? "" : w[6];
    for (std::size_t i = 7; i < w.size(); ++i) k.signature += (i > 7 ? " " : "") + w[i];
    try {
      (void)std::regex(k.op == "*" ? ".*" : k.op);
    } catch (const std::regex_error&) {
      throw fail(fmt::format("'{}' is not a valid regular expression", k.op));
    }
    if (k.status != "*") {
      try {
        if (!is_finding(status_from_string(k.status))) throw fail(fmt::format("'{}' is not a finding", k.status));
      } catch (const std::invalid_argument&) {
        throw fail(fmt::format("unknown status '{}'", k.status));
      }
    }
    if (k.issue.find('#') == std::string::npos || k.issue.back() == '#')
      throw fail(fmt::format("'{}' is no issue (write it as pytorch#NNNN or owner/repo#NNNN)", k.issue));
    k.note = note;
    out.push_back(std::move(k));
  }
  return out;
}

std::vector<KnownIssue> load_known_issues(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw KnownIssuesError(fmt::format("cannot read the known-issues table {}", path));
  std::stringstream s;
  s << in.rdbuf();
  return parse_known_issues(s.str(), path);
}

const KnownIssue* match_known_issue(const std::vector<KnownIssue>& table, const Fingerprint& fp) {
  for (const auto& k : table) {
    if (k.op != "*" && !std::regex_match(fp.op, std::regex(k.op))) continue;
    if (!any_or(k.dtype, fp.dtype) || !any_or(k.layout, fp.layout) || !any_or(k.status, fp.status)) continue;
    if (!k.signature.empty() && fp.signature.find(error_signature(k.signature)) == std::string::npos) continue;
    return &k;
  }
  return nullptr;
}

std::string known_text(const KnownIssue* k) {
  if (!k) return "new";
  std::string versions;
  if (!k->fixed_in.empty()) versions = "fixed in " + k->fixed_in;
  if (!k->broken_in.empty())
    versions += (versions.empty() ? "" : ", ") + std::string("still broken in ") + k->broken_in;
  return "known: " + k->issue + (versions.empty() ? "" : " (" + versions + ")");
}

std::vector<FingerprintGroup> findings_by_fingerprint(const std::vector<CaseResult>& cases,
                                                      const std::vector<KnownIssue>& table) {
  std::map<std::string, FingerprintGroup> by_text;
  for (const auto& c : cases) {
    if (!is_finding(c.status)) continue;
    const Fingerprint fp = fingerprint_of(c);
    FingerprintGroup& g = by_text[fp.text()];
    if (g.findings.empty()) g.fingerprint = fp, g.known = known_text(match_known_issue(table, fp));
    g.findings.push_back(&c);
  }
  std::vector<FingerprintGroup> out;
  for (auto& [text, g] : by_text) {
    std::sort(g.findings.begin(), g.findings.end(), [](auto* a, auto* b) { return a->id < b->id; });
    out.push_back(std::move(g));
  }
  std::stable_sort(out.begin(), out.end(), [](const FingerprintGroup& a, const FingerprintGroup& b) {
    return a.findings.size() > b.findings.size();
  });
  return out;
}

nlohmann::json fingerprints_json(const std::vector<FingerprintGroup>& groups) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& g : groups) {
    std::vector<std::string> ids;
    for (const auto* c : g.findings) ids.push_back(c->id);
    out.push_back({{"fingerprint", g.fingerprint.text()},
                   {"op", g.fingerprint.op},
                   {"dtype", g.fingerprint.dtype},
                   {"layout", g.fingerprint.layout},
                   {"status", g.fingerprint.status},
                   {"signature", g.fingerprint.signature},
                   {"known", g.known},
                   {"cases", ids}});
  }
  return out;
}

}  // namespace mpscheck
