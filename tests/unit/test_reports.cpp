#include "checks/recommend.hpp"
#include "reports/console.hpp"
#include "reports/escape.hpp"
#include "reports/bug_report.hpp"
#include "reports/report.hpp"
#include "reports/reporter.hpp"
#include "reports/writers.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <vector>

using namespace mpscheck;

namespace {

const std::string kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD in UTF-8
// An id and a message built to break every format: markup, entities, quotes, CDATA end,
// a control character, invalid UTF-8, Markdown table syntax.
const std::string kHostileId = "op/evil/<b>&\"'x]]>\x01\xff\xfe|`*_[y]/f32/v/forward";
const std::string kHostileMessage = "<script>alert(\"x\")</script> & ]]> \x01 \xff\xfe | `code` *b* _i_ [l](u)\nline2";

CaseResult make_case(const std::string& id, Status status, const std::string& message = "") {
  CaseResult c;
  c.id = id;
  c.kind = id.rfind("model/", 0) == 0 ? CaseKind::Model : CaseKind::Op;
  c.status = status;
  c.message = message;
  c.target = "mps";
  c.wall_s = 0.25;
  if (status == Status::Pass || status == Status::Mismatch || status == Status::Nan) {
    OutputReport o;
    o.name = "out";
    o.shape = {4, 8};
    o.numel = 32;
    o.reference_dtype = o.target_dtype = "float32";
    o.max_abs = status == Status::Mismatch ? 0.5 : 1e-7;
    o.max_rel = status == Status::Mismatch ? 0.1 : 1e-6;
    o.ok = status == Status::Pass;
    if (status == Status::Mismatch) o.mismatches = 3, o.first_mismatch = 7;
    if (status == Status::Nan) o.nan_target = 2;
    c.outputs.push_back(o);
    c.rtol = 1.3e-6;
    c.atol = 1e-5;
  }
  return c;
}

CaseResult timed(CaseResult c, double speedup) {
  c.reference_time = TimingStats{1e-3, 0.98e-3, 1.02e-3, 20};
  c.target_time = TimingStats{1e-3 / speedup, 0.98e-3 / speedup, 1.02e-3 / speedup, 20};
  c.speedup = speedup;
  c.speed_class = speedup > 1.2 ? SpeedClass::Faster : speedup < 0.8 ? SpeedClass::Slower : SpeedClass::Similar;
  return c;
}

// One case of every status across two op families and the models.
RunReport mixed_report() {
  RunReport r;
  r.environment = {{"torch_version", "2.5.1"}, {"target", "mps"}, {"os", "macOS 15.1"}, {"threads", 8}};
  r.run = {{"target", "mps"}, {"wall_s", 12.5}};
  r.cases = {
      timed(make_case("op/conv/conv2d/f32/contiguous/forward", Status::Pass), 3.0),
      make_case("op/conv/conv2d/f32/channels_last/forward", Status::Mismatch,
                "out: 3 of 32 elements outside tolerance"),
      make_case("op/conv/conv2d/f16/contiguous/forward", Status::Unsupported, "not implemented for 'Half'"),
      timed(make_case("op/softmax/softmax/f32/contiguous/forward", Status::Pass), 0.5),
      make_case("op/softmax/softmax/f16/contiguous/forward", Status::Nan, "target has 2 NaN"),
      make_case("op/softmax/softmax/f32/contiguous/backward", Status::Skip, "no gradient"),
      make_case("model/resnet18/infer", Status::Error, "RuntimeError: boom"),
      make_case("model/resnet18/train", Status::Crash, "the worker died from SIGSEGV"),
      make_case("model/vae/train", Status::Timeout, "no result within 60 s"),
  };
  return r;
}

int count_of(const std::string& text, const std::string& needle) {
  int n = 0;
  for (auto pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + needle.size())) ++n;
  return n;
}

// Just enough XML to check structure: elements with attributes, nesting checked on a stack.
struct XmlElement {
  std::string name;
  std::map<std::string, std::string> attributes;
  int depth = 0;
  std::string parent;
};

std::vector<XmlElement> parse_xml(const std::string& xml) {
  std::vector<XmlElement> elements;
  std::vector<std::string> open;
  const std::regex tag(R"(<(/?)([A-Za-z_][\w.-]*)((?:\s+[\w:.-]+="[^"<]*")*)\s*(/?)>)");
  const std::regex attribute(R"re(([\w:.-]+)="([^"]*)")re");
  std::size_t pos = xml.find("?>");
  EXPECT_EQ(xml.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>", 0), 0u) << "no XML declaration";
  pos = pos == std::string::npos ? 0 : pos + 2;
  for (std::sregex_iterator it(xml.begin() + pos, xml.end(), tag), end; it != end; ++it) {
    const auto& m = *it;
    // Text between tags must hold no markup: a raw '<' would have been matched or skipped.
    const std::string before = m.prefix().str();
    EXPECT_EQ(before.find('<'), std::string::npos) << "unparsed markup: " << before;
    if (m[1] == "/") {
      EXPECT_FALSE(open.empty()) << "closing tag with nothing open: " << m[2];
      if (open.empty()) break;
      EXPECT_EQ(open.back(), m[2].str()) << "misnested element";
      open.pop_back();
      continue;
    }
    XmlElement e;
    e.name = m[2];
    e.depth = static_cast<int>(open.size());
    e.parent = open.empty() ? "" : open.back();
    const std::string attrs = m[3];
    for (std::sregex_iterator a(attrs.begin(), attrs.end(), attribute), aend; a != aend; ++a)
      e.attributes[(*a)[1]] = (*a)[2];
    elements.push_back(e);
    if (m[4] != "/") open.push_back(e.name);
  }
  EXPECT_TRUE(open.empty()) << "unclosed element " << (open.empty() ? "" : open.back());
  return elements;
}

int attr_int(const XmlElement& e, const std::string& name) {
  const auto it = e.attributes.find(name);
  EXPECT_NE(it, e.attributes.end()) << e.name << " has no " << name;
  return it == e.attributes.end() ? -1 : std::stoi(it->second);
}

void expect_no_raw_hostile_bytes(const std::string& out) {
  EXPECT_EQ(out.find('\x01'), std::string::npos) << "control character passed through";
  EXPECT_EQ(out.find('\xff'), std::string::npos) << "invalid UTF-8 passed through";
  EXPECT_EQ(out.find('\xfe'), std::string::npos) << "invalid UTF-8 passed through";
  EXPECT_EQ(valid_utf8(out), out) << "output is not valid UTF-8";
  EXPECT_EQ(out.find("<script>alert"), std::string::npos);
  EXPECT_EQ(out.find("<b>&"), std::string::npos);
  EXPECT_EQ(out.find("]]>"), std::string::npos);
  EXPECT_NE(out.find(kReplacementChar), std::string::npos) << "invalid bytes were dropped, not replaced";
}

RunReport hostile_report() {
  RunReport r = mixed_report();
  r.environment["os"] = "<os> & \"quoted\" \xff";
  r.run["target"] = "mps<x>";
  r.cases.push_back(make_case(kHostileId, Status::Mismatch, kHostileMessage));
  r.cases.push_back(make_case(kHostileId + "/skip", Status::Skip, kHostileMessage));
  r.cases.push_back(timed(make_case(kHostileId + "/timed", Status::Pass, kHostileMessage), 2.0));
  return r;
}

}  // namespace

TEST(Escape, InvalidUtf8BecomesReplacementCharacters) {
  EXPECT_EQ(valid_utf8("a\xff\xfe"
                       "b"),
            "a" + kReplacementChar + kReplacementChar + "b");
  EXPECT_EQ(valid_utf8("x\xE2\x82"), "x" + kReplacementChar);             // truncated 3-byte sequence
  EXPECT_EQ(valid_utf8("\xC0\xAF").find('\xC0'), std::string::npos);      // overlong '/'
  EXPECT_EQ(valid_utf8("\xED\xA0\x80").find('\xED'), std::string::npos);  // UTF-16 surrogate
  const std::string good = "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80";   // é € 😀 stay as they are
  EXPECT_EQ(valid_utf8(good), good);
}

TEST(Escape, XmlEscapesMarkupAndDropsControlCharacters) {
  const std::string out = xml_escape("<a href=\"x\">&'</a>]]>\x01\x1f\x7f\xff\n");
  EXPECT_EQ(out, "&lt;a href=&quot;x&quot;&gt;&amp;&apos;&lt;/a&gt;]]&gt;" + kReplacementChar + "&#10;");
}

TEST(Escape, HtmlEscapesTextAndAttributes) {
  EXPECT_EQ(html_escape("<img src=x onerror='a'>&\x01\xfe"),
            "&lt;img src=x onerror=&#39;a&#39;&gt;&amp;" + kReplacementChar);
}

TEST(Escape, MarkdownEscapesTableSyntax) {
  EXPECT_EQ(markdown_escape("a|b `c` *d* _e_ [f](g) <h> &\nnext\x01"),
            "a\\|b \\`c\\` \\*d\\* \\_e\\_ \\[f\\](g) &lt;h&gt; &amp; next");
}

TEST(Escape, ShortenCutsWholeCodePoints) {
  EXPECT_EQ(shorten("abcdef", 10), "abcdef");
  EXPECT_EQ(shorten("abcdef", 4), "abc\xE2\x80\xA6");
  EXPECT_EQ(shorten("\xC3\xA9\xC3\xA9\xC3\xA9", 2), "\xC3\xA9\xE2\x80\xA6");  // never half an 'é'
}

TEST(Escape, FiguresSpellOutNonFiniteValues) {
  EXPECT_EQ(format_figure(0.000123456), "0.000123");
  EXPECT_EQ(format_figure(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(format_figure(std::nan("")), "nan");
}

TEST(Escape, LargeSlowdownsKeepTheirDigits) {
  EXPECT_EQ(format_speedup(1.034), "1.03");
  EXPECT_EQ(format_speedup(12.5), "12.50");
  EXPECT_EQ(format_speedup(0.1), "0.10");
  EXPECT_EQ(format_speedup(5.7e-6 / 2.15e-3), "0.0027");  // was printed "0.00", as if infinitely slow
}

TEST(JunitReport, ElementCountsEqualCaseStatuses) {
  const RunReport report = mixed_report();
  const auto elements = parse_xml(render_junit(report));
  std::map<std::string, int> n;
  for (const auto& e : elements) ++n[e.name];
  int findings = 0, skips = 0;
  for (const auto& c : report.cases) findings += is_finding(c.status), skips += c.status == Status::Skip;
  EXPECT_EQ(n["testsuites"], 1);
  EXPECT_EQ(n["testsuite"], 3);  // op/conv, op/softmax, model
  EXPECT_EQ(n["testcase"], static_cast<int>(report.cases.size()));
  EXPECT_EQ(n["failure"], findings);
  EXPECT_EQ(findings, 6);  // unsupported counts: it blocks a migration
  EXPECT_EQ(n["skipped"], skips);
  EXPECT_EQ(n["error"], 0);
}

TEST(JunitReport, AttributesAddUpAcrossSuites) {
  const auto elements = parse_xml(render_junit(mixed_report()));
  ASSERT_FALSE(elements.empty());
  const XmlElement& root = elements.front();
  ASSERT_EQ(root.name, "testsuites");
  EXPECT_EQ(root.attributes.at("name"), "mpscheck");
  EXPECT_EQ(root.attributes.at("time"), "12.500");

  int tests = 0, failures = 0, skipped = 0, errors = 0;
  std::map<std::string, std::map<std::string, int>> seen;  // suite -> element name -> count
  std::string suite;
  for (const auto& e : elements) {
    if (e.name == "testsuite") {
      EXPECT_EQ(e.parent, "testsuites");
      suite = e.attributes.at("name");
      tests += attr_int(e, "tests");
      failures += attr_int(e, "failures");
      skipped += attr_int(e, "skipped");
      errors += attr_int(e, "errors");
    } else if (e.name == "testcase") {
      EXPECT_EQ(e.parent, "testsuite");
      EXPECT_EQ(e.attributes.at("classname"), suite);
      EXPECT_EQ(e.attributes.at("time"), "0.250");
      ++seen[suite]["testcase"];
    } else if (e.name == "failure" || e.name == "skipped") {
      EXPECT_EQ(e.parent, "testcase");
      ++seen[suite][e.name];
    }
  }
  EXPECT_EQ(tests, attr_int(root, "tests"));
  EXPECT_EQ(failures, attr_int(root, "failures"));
  EXPECT_EQ(skipped, attr_int(root, "skipped"));
  EXPECT_EQ(errors, attr_int(root, "errors"));
  EXPECT_EQ(tests, 9);
  // Each suite's attributes match the elements inside it.
  for (const auto& e : elements) {
    if (e.name != "testsuite") continue;
    const auto& inside = seen[e.attributes.at("name")];
    EXPECT_EQ(attr_int(e, "tests"), inside.count("testcase") ? inside.at("testcase") : 0) << e.attributes.at("name");
    EXPECT_EQ(attr_int(e, "failures"), inside.count("failure") ? inside.at("failure") : 0) << e.attributes.at("name");
    EXPECT_EQ(attr_int(e, "skipped"), inside.count("skipped") ? inside.at("skipped") : 0) << e.attributes.at("name");
  }
}

TEST(JunitReport, SuitesAreFamiliesAndModelsNamedByTheRestOfTheId) {
  const auto elements = parse_xml(render_junit(mixed_report()));
  std::vector<std::string> suites;
  std::map<std::string, std::string> classname_of;
  for (const auto& e : elements) {
    if (e.name == "testsuite") suites.push_back(e.attributes.at("name"));
    if (e.name == "testcase") classname_of[e.attributes.at("name")] = e.attributes.at("classname");
  }
  EXPECT_EQ(suites, (std::vector<std::string>{"model", "op/conv", "op/softmax"}));
  EXPECT_EQ(classname_of.at("conv2d/f32/channels_last/forward"), "op/conv");
  EXPECT_EQ(classname_of.at("resnet18/train"), "model");
}

TEST(JunitReport, FailureNamesTheStatusAndCarriesTheFigures) {
  const std::string xml = render_junit(mixed_report());
  EXPECT_NE(xml.find(R"(type="mismatch")"), std::string::npos);
  EXPECT_NE(xml.find(R"(type="unsupported")"), std::string::npos);
  EXPECT_NE(xml.find(R"(<skipped message="no gradient"/>)"), std::string::npos);
  EXPECT_NE(xml.find("max abs error 0.5"), std::string::npos);
  EXPECT_NE(xml.find("first mismatch at flat index 7"), std::string::npos);
  EXPECT_NE(xml.find("target: mps"), std::string::npos);
  EXPECT_EQ(xml.find("CDATA"), std::string::npos);
}

TEST(JunitReport, HostileTextIsEscapedAndStillWellFormed) {
  const std::string xml = render_junit(hostile_report());
  expect_no_raw_hostile_bytes(xml);
  EXPECT_NE(xml.find("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; ]]&gt;"), std::string::npos);
  EXPECT_NE(xml.find("&lt;b&gt;&amp;&quot;&apos;x]]&gt;"), std::string::npos);
  const auto elements = parse_xml(xml);
  int failures = 0;
  for (const auto& e : elements) failures += e.name == "failure";
  EXPECT_EQ(failures, 7);
}

TEST(JunitReport, EmptyRunIsValid) {
  const auto elements = parse_xml(render_junit(RunReport{}));
  ASSERT_EQ(elements.size(), 1u);
  EXPECT_EQ(attr_int(elements[0], "tests"), 0);
}

TEST(MarkdownReport, TheVerdictLeadsAndFindingsAreGroupedByOp) {
  RunReport report = mixed_report();
  for (auto& c : report.cases) recommend(c);
  const std::string md = render_markdown(report);
  EXPECT_EQ(md.rfind("# mpscheck report: target mps, torch 2.5.1", 0), 0u);
  const auto verdict = md.find("## Verdict per workload class"), findings = md.find("## Findings by op (6 in 4 ops)"),
             speed = md.find("## Speed"), env = md.find("## Environment");
  ASSERT_NE(verdict, std::string::npos);
  ASSERT_NE(findings, std::string::npos) << md;
  ASSERT_NE(speed, std::string::npos);
  EXPECT_LT(verdict, findings);
  EXPECT_LT(findings, speed);
  EXPECT_LT(speed, env);
  EXPECT_NE(md.find("| model/resnet18 | blocked |"), std::string::npos) << md;
  // One row per op, the worst first; conv2d's row counts its dtypes' statuses, passes included.
  EXPECT_LT(md.find("| model/resnet18 | crash | 2 of 2 |"), md.find("| op/conv/conv2d | mismatch | 2 of 3 |"));
  EXPECT_NE(md.find("| op/conv/conv2d | mismatch | 2 of 3 | f32: 1 pass, 1 mismatch; f16: 1 unsupported |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| op/softmax/softmax | nan |"), std::string::npos);
  EXPECT_GT(md.find("op/conv/conv2d/f32/contiguous/forward"), speed);
  EXPECT_NE(md.find("| op/conv/conv2d/f32/contiguous/forward | 3.00x | faster |"), std::string::npos);
  EXPECT_NE(md.find("| **total** | **9** |"), std::string::npos);
}

TEST(MarkdownReport, ManyTimedCasesShowTopAndBottom) {
  RunReport r;
  for (int i = 1; i <= 30; ++i)
    r.cases.push_back(timed(make_case("op/add/add/f32/v" + std::to_string(i) + "/forward", Status::Pass), i / 10.0));
  const std::string md = render_markdown(r);
  EXPECT_NE(md.find("| … 10 more … |"), std::string::npos);
  EXPECT_NE(md.find("/v30/"), std::string::npos);  // fastest
  EXPECT_NE(md.find("/v1/"), std::string::npos);   // slowest
  EXPECT_EQ(md.find("/v15/"), std::string::npos);  // middle, left out
  EXPECT_NE(md.find("None: every case passed"), std::string::npos);
}

TEST(MarkdownReport, LongFindingListsAreCappedWorstFirst) {
  RunReport r;
  for (int i = 0; i < 70; ++i)
    r.cases.push_back(make_case("op/add/op" + std::to_string(i) + "/f16/v/forward", Status::Unsupported, "no Half"));
  r.cases.push_back(make_case("op/add/crashing/f32/v/forward", Status::Crash, "SIGSEGV"));
  const std::string md = render_markdown(r);
  EXPECT_NE(md.find("## Findings by op (71 in 71 ops)"), std::string::npos);
  EXPECT_EQ(count_of(md, "| unsupported | 1 of 1 |"), 59);  // rows of the grouped table
  EXPECT_LT(md.find("| op/add/crashing | crash |"), md.find("| unsupported | 1 of 1 |"));
  EXPECT_NE(md.find("| … 11 more ops with findings"), std::string::npos);
  // One op's 70 variants are one row, not 70.
  RunReport one;
  for (int i = 0; i < 70; ++i)
    one.cases.push_back(make_case("op/add/add/f16/v" + std::to_string(i) + "/forward", Status::Unsupported, "no Half"));
  const std::string grouped = render_markdown(one);
  EXPECT_NE(grouped.find("| op/add/add | unsupported | 70 of 70 | f16: 70 unsupported |"), std::string::npos);
  // Only the worst case is named in the op table (the fingerprint table after it names each, by layout).
  EXPECT_EQ(count_of(grouped.substr(0, grouped.find("## Findings by fingerprint")), "op/add/add/f16/v"), 1);
}

TEST(MarkdownReport, HostileTextIsEscaped) {
  const std::string md = render_markdown(hostile_report());
  expect_no_raw_hostile_bytes(md);
  EXPECT_NE(md.find("&lt;script&gt;alert(\"x\")&lt;/script&gt; &amp; \\]\\]&gt;"), std::string::npos);
  EXPECT_NE(md.find("\\| \\`code\\` \\*b\\* \\_i\\_ \\[l\\](u) line2"), std::string::npos);
  EXPECT_NE(md.find("target mps&lt;x&gt;"), std::string::npos);
  // A table row stays one line with the column count of its header (the findings-by-op table's six).
  const auto row = md.find("| op/evil/");
  ASSERT_NE(row, std::string::npos);
  const std::string line = md.substr(row, md.find('\n', row) - row);
  int bars = 0;
  for (std::size_t i = 0; i < line.size(); ++i) bars += line[i] == '|' && (i == 0 || line[i - 1] != '\\');
  EXPECT_EQ(bars, 7) << line;
}

TEST(HtmlReport, TheAnswerComesFirstAndFindingsAreGroupedByOp) {
  RunReport report = mixed_report();
  for (auto& c : report.cases) recommend(c);
  const std::string html = render_html(report);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  const auto verdict = html.find("<section id=\"verdict\">");
  const auto findings = html.find("<section id=\"findings\">");
  const auto speed = html.find("<section id=\"speed\">");
  const auto environment = html.find("<section id=\"environment\">");
  ASSERT_NE(verdict, std::string::npos);
  ASSERT_NE(findings, std::string::npos);
  ASSERT_NE(environment, std::string::npos);
  // Recommendations, then findings, then speed; the environment last.
  EXPECT_LT(verdict, findings);
  EXPECT_LT(findings, speed);
  EXPECT_LT(speed, environment);
  EXPECT_NE(html.find("<span class=\"rec r-0\">blocked</span>", verdict), std::string::npos);
  // The worst group leads (crash), and a passing case is never a findings row, only a matrix cell.
  const auto first_group = html.find("<details class=\"group\"", findings);
  EXPECT_EQ(html.find("<details class=\"group\" data-op=\"model/resnet18\"", findings), first_group);
  const std::string passing_row = "<td class=\"id\">op/conv/conv2d/f32/contiguous/forward</td>";
  EXPECT_GT(html.find(passing_row), speed);
  // conv2d's group: f32 passes and f16 is unsupported, both in its matrix.
  const auto conv = html.find("data-op=\"op/conv/conv2d\"", findings);
  ASSERT_NE(conv, std::string::npos);
  const auto conv_end = html.find("</details>\n<details class=\"group\"", conv);
  const std::string group = html.substr(conv, conv_end == std::string::npos ? std::string::npos : conv_end - conv);
  EXPECT_NE(group.find("title=\"op/conv/conv2d/f16/contiguous/forward: unsupported\""), std::string::npos) << group;
  EXPECT_NE(group.find("title=\"op/conv/conv2d/f32/contiguous/forward: pass\""), std::string::npos) << group;
  EXPECT_NE(html.find("class=\"findings\""), std::string::npos);
  EXPECT_NE(html.find("addEventListener('click'"), std::string::npos);
}

TEST(HtmlReport, HasChartsAndCoverageMatrix) {
  const std::string html = render_html(mixed_report());
  EXPECT_NE(html.find("<svg xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  EXPECT_NE(html.find("aria-label=\"speedup per case, log scale\""), std::string::npos);
  EXPECT_NE(html.find("aria-label=\"max abs error per case, log scale\""), std::string::npos);
  EXPECT_NE(html.find("<rect class=\"faster\""), std::string::npos);
  EXPECT_NE(html.find("<rect class=\"slower\""), std::string::npos);
  EXPECT_NE(html.find("<line class=\"one\""), std::string::npos);  // the 1x line
  const auto coverage = html.find("<section id=\"coverage\">");
  ASSERT_NE(coverage, std::string::npos);
  EXPECT_NE(html.find("<th class=\"op\">conv/conv2d</th>", coverage), std::string::npos);
  // conv2d f32 has a pass and a mismatch: the cell shows the worst; f16 is unsupported.
  EXPECT_NE(html.find("class=\"cell s-mismatch\" title=\"conv/conv2d f32: worst mismatch; 2 cases: 1 mismatch 1 pass",
                      coverage),
            std::string::npos);
  EXPECT_NE(html.find("class=\"cell s-unsupported\" title=\"conv/conv2d f16: worst unsupported", coverage),
            std::string::npos);
  EXPECT_NE(html.find("class=\"cell s-nan\" title=\"softmax/softmax f16", coverage), std::string::npos);
  // Models are not operators.
  EXPECT_EQ(html.find("<th class=\"op\">resnet18", coverage), std::string::npos);
}

TEST(HtmlReport, SlowdownFiguresStayClearOfTheCaseNames) {
  // 600x slower reaches the chart's left edge: its figure must not be drawn over the names column
  // (x < 420, text-anchor end); a 2x slowdown leaves room and keeps its figure left of its bar.
  RunReport r;
  r.cases = {timed(make_case("op/faults/slow", Status::Pass), 1.0 / 600), timed(make_case("op/a/b", Status::Pass), 0.5),
             timed(make_case("op/a/c", Status::Pass), 20.0)};
  const std::string html = render_html(r);
  auto figure_x = [&](const std::string& figure, std::string* anchor) {
    const auto at = html.find(">" + figure + "&#215;</text>");
    EXPECT_NE(at, std::string::npos) << figure;
    const auto open = html.rfind("<text x=\"", at);
    *anchor = html.substr(html.find("text-anchor=\"", open) + 13, 3);
    return std::stod(html.substr(open + 9));
  };
  std::string anchor;
  const double far = figure_x(format_speedup(1.0 / 600), &anchor);
  EXPECT_GT(far, 420.0);
  EXPECT_EQ(anchor, "sta");
  const double near = figure_x(format_speedup(0.5), &anchor);
  EXPECT_GT(near, 420.0);
  EXPECT_EQ(anchor, "end");
}

TEST(HtmlReport, SelfContained) {
  const std::string html = render_html(mixed_report());
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  EXPECT_EQ(count_of(html, "<script>"), 1);
}

TEST(HtmlReport, HostileTextIsEscapedInTextAndAttributes) {
  const std::string html = render_html(hostile_report());
  expect_no_raw_hostile_bytes(html);
  EXPECT_EQ(count_of(html, "<script>"), 1);  // our own script only
  EXPECT_NE(html.find("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; ]]&gt;"), std::string::npos);
  EXPECT_NE(html.find("op/evil/&lt;b&gt;&amp;&quot;&#39;x]]&gt;"), std::string::npos);
  EXPECT_NE(html.find("title=\"evil/&lt;b&gt;&amp;&quot;&#39;x]]&gt;"), std::string::npos);  // coverage tooltip
  EXPECT_NE(html.find("&lt;os&gt; &amp; &quot;quoted&quot;"), std::string::npos);
}

TEST(WriteTextReport, WritesAtomicallyAndLeavesNoTemporaryFile) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("mpscheck-reports-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::string path = (dir / "sub" / "report.md").string();
  write_text_report(path, "first");
  write_text_report(path, "second\n");
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "second\n");
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir / "sub")) ++files, (void)entry;
  EXPECT_EQ(files, 1);
  fs::remove_all(dir);
}

TEST(WriteTextReport, FailureNamesThePath) {
  namespace fs = std::filesystem;
  const fs::path blocker = fs::temp_directory_path() / ("mpscheck-blocker-" + std::to_string(::getpid()));
  std::ofstream(blocker) << "a file, not a folder";
  const std::string path = (blocker / "report.html").string();
  try {
    write_text_report(path, "x");
    ADD_FAILURE() << "no ReportError";
  } catch (const ReportError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
  }
  fs::remove(blocker);
}

// A CPU fallback is its own status in every report: counted, listed with the findings, never in
// the speed table, and its recommendation is to keep the op on the CPU.
TEST(FallbackStatus, EveryReportCountsIt) {
  RunReport report;
  report.run = {{"target", "mps"}};
  CaseResult f = make_case("op/linalg/eigh/f32/contiguous/forward", Status::Fallback,
                           "the target ran part of this on the CPU, so it is not a target result: The operator "
                           "'aten::_linalg_eigh' is not currently supported on the MPS backend and will fall back");
  f.warnings = {"target: The operator 'aten::_linalg_eigh' is not currently supported on the MPS backend"};
  recommend(f);
  CaseResult p = timed(make_case("op/conv/conv2d/f32/contiguous/forward", Status::Pass), 2.0);
  recommend(p);
  report.cases = {f, p};

  EXPECT_EQ(report_to_json(report)["summary"]["fallback"], 1);
  EXPECT_EQ(report_to_json(report)["cases"][0]["warnings"].size(), 1u);
  const std::string junit = render_junit(report);
  EXPECT_NE(junit.find(R"(<property name="verdict" value="fallback"/>)"), std::string::npos);
  EXPECT_EQ(count_of(junit, "<failure"), 1);
  const std::string md = render_markdown(report);
  EXPECT_NE(md.find("| fallback | 1 |"), std::string::npos) << md;
  EXPECT_NE(md.find("op/linalg/eigh"), std::string::npos);
  EXPECT_NE(md.find("1 timed"), std::string::npos) << "only the pass is in the speed table";
  const std::string html = render_html(report);
  EXPECT_NE(html.find("s-fallback"), std::string::npos);
  std::ostringstream console;
  ConsoleReporter(console, false, false).summary(report, "r.json");
  EXPECT_NE(console.str().find("fallback"), std::string::npos) << console.str();
  EXPECT_NE(console.str().find("aten::_linalg_eigh"), std::string::npos) << console.str();
  const auto classes = summarize_classes(report.cases);
  EXPECT_EQ(classes.at("op/linalg").keep_on_cpu, 1);
  EXPECT_EQ(classes.at("op/linalg").recommendation(), "keep on CPU");
}

// Every format goes through reports/reporters.cpp: a flag each (the console has none), the JSON
// record first and the console summary last, and each file format writes what its renderer
// renders, through the one atomic writer.
TEST(Reporters, OneListWithUniqueFlagsRecordFirstConsoleLast) {
  const auto& all = reporters();
  ASSERT_GE(all.size(), 6u);
  EXPECT_STREQ(all.front()->flag(), "json");
  EXPECT_EQ(all.back()->destination(), Destination::Console);
  std::set<std::string> flags;
  for (const Reporter* r : all) {
    EXPECT_TRUE(flags.insert(r->flag()).second) << "two reporters claim --" << r->flag();
    EXPECT_FALSE(std::string(r->help()).empty()) << r->flag();
  }
  for (const char* f : {"json", "junit", "markdown", "html", "bug-reports", ""}) EXPECT_TRUE(flags.count(f)) << f;
}

TEST(Reporters, EachFileFormatWritesItsRendererOutput) {
  RunReport report;
  report.run["target"] = "mps";
  report.cases = {make_case("op/unary/abs/f32/contiguous/forward", Status::Pass),
                  make_case("op/unary/exp/f32/contiguous/forward", Status::Mismatch, "out: 3 of 32 elements")};
  const auto dir = std::filesystem::temp_directory_path() / ("mpscheck-reporters-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ostringstream console;
  const ReproTarget rt{"mps", "float32", 0, true};
  const ReportContext ctx{report, (dir / "report.json").string(), &rt, nullptr, console, false};
  const std::map<std::string, std::string> expected{
      {"junit", render_junit(report)}, {"markdown", render_markdown(report)}, {"html", render_html(report)}};
  for (const Reporter* r : reporters()) {
    const std::string flag = r->flag();
    if (!expected.count(flag)) continue;
    const auto path = dir / (flag + ".out");
    r->write(ctx, path.string());
    std::ifstream in(path, std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(text, expected.at(flag)) << flag;
  }
  for (const Reporter* r : reporters())
    if (std::string(r->flag()) == "json") r->write(ctx, ctx.json_path);
  EXPECT_EQ(read_json_report(ctx.json_path).cases.size(), 2u);
  for (const Reporter* r : reporters())
    if (std::string(r->flag()) == "bug-reports") r->write(ctx, (dir / "bugs").string());
  EXPECT_TRUE(std::filesystem::exists(dir / "bugs" / (case_file_name(report.cases[1].id) + ".md")));
  EXPECT_FALSE(std::filesystem::exists(dir / "bugs" / (case_file_name(report.cases[0].id) + ".md")));
  reporters().back()->write(ctx, "");
  EXPECT_NE(console.str().find("Summary (2 cases, target mps)"), std::string::npos) << console.str();
  std::filesystem::remove_all(dir);
}

// The CSV format (one file and one line in reports/reporters.cpp): a header, one row per case,
// quoting that survives commas, quotes and newlines, empty cells where a figure does not apply.
TEST(CsvReport, OneRowPerCaseQuotedAndEmptyWhereNotApplicable) {
  RunReport report;
  report.cases = {timed(make_case("op/unary/abs/f32/contiguous/forward", Status::Pass), 2.0),
                  make_case("op/unary/exp/f32/contiguous/forward", Status::Mismatch, "out: 3, \"first\"\nat [7]"),
                  make_case("op/unary/log/f32/contiguous/forward", Status::Crash)};
  const Reporter* csv = nullptr;
  for (const Reporter* r : reporters())
    if (std::string(r->flag()) == "csv") csv = r;
  ASSERT_NE(csv, nullptr) << "--csv is not registered in reports/reporters.cpp";
  const auto path = std::filesystem::temp_directory_path() / ("mpscheck-csv-" + std::to_string(::getpid()) + ".csv");
  std::ostringstream console;
  csv->write(ReportContext{report, "", nullptr, nullptr, console, false}, path.string());
  std::ifstream in(path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove(path);
  std::vector<std::string> rows;
  for (size_t at = 0, end; (end = text.find("\r\n", at)) != std::string::npos; at = end + 2)
    rows.push_back(text.substr(at, end - at));
  ASSERT_EQ(rows.size(), 4u) << text;  // the quoted message's newline is inside a cell, not a row end
  EXPECT_EQ(rows[0].rfind("id,status,", 0), 0u);
  EXPECT_NE(rows[1].find(",pass,"), std::string::npos);
  EXPECT_NE(rows[1].find(",2,faster,"), std::string::npos) << rows[1];
  EXPECT_NE(rows[2].find(",mismatch,"), std::string::npos);
  EXPECT_NE(rows[2].find(",0.5,0.1,"), std::string::npos) << rows[2];
  EXPECT_NE(rows[2].find("\"out: 3, \"\"first\"\"\nat [7]\""), std::string::npos) << rows[2];
  EXPECT_NE(rows[3].find(",crash,,,,,,,,,,"), std::string::npos) << rows[3];
}

// The registry is the whole command-line surface of the formats: one flag each, none shared, only
// the console without one, and only the JSON record written where no flag asks for it.
TEST(Reporters, EveryRegisteredReporterHasItsOwnFlag) {
  std::set<std::string> flags;
  int consoles = 0;
  for (const Reporter* r : reporters()) {
    const std::string flag = r->flag();
    EXPECT_TRUE(flags.insert(flag).second) << "two reporters claim --" << flag;
    if (r->destination() == Destination::Console) {
      ++consoles;
      EXPECT_TRUE(flag.empty()) << flag;
      continue;
    }
    ASSERT_FALSE(flag.empty()) << r->help();
    EXPECT_EQ(flag.find_first_not_of("abcdefghijklmnopqrstuvwxyz-"), std::string::npos) << flag;
    EXPECT_NE(flag.front(), '-') << flag;
    EXPECT_EQ(r->default_destination("out"), flag == "json" ? "out/report.json" : "") << flag;
  }
  EXPECT_EQ(consoles, 1);
}

// A format that cannot write says which file: for every file and folder format, a destination
// under a plain file (which no folder can be made in) fails with a ReportError naming the path.
TEST(Reporters, AFailingWriteNamesTheFile) {
  namespace fs = std::filesystem;
  const fs::path blocker = fs::temp_directory_path() / ("mpscheck-reporter-blocker-" + std::to_string(::getpid()));
  std::ofstream(blocker) << "a file, not a folder";
  RunReport report;
  report.run["target"] = "mps";
  report.cases = {make_case("op/unary/exp/f32/contiguous/forward", Status::Mismatch, "out: 3 of 32 elements")};
  std::ostringstream console;
  const ReproTarget rt{"mps", "float32", 0, true};
  const ReportContext ctx{report, "", &rt, nullptr, console, false};
  int tried = 0;
  for (const Reporter* r : reporters()) {
    if (r->destination() == Destination::Console) continue;
    const std::string flag = r->flag();
    const std::string destination = (blocker / (flag + ".out")).string();
    ++tried;
    try {
      r->write(ctx, destination);
      ADD_FAILURE() << "--" << flag << " wrote under a plain file without an error";
    } catch (const ReportError& e) {
      EXPECT_NE(std::string(e.what()).find(destination), std::string::npos) << flag << ": " << e.what();
    }
  }
  EXPECT_GE(tried, 5);
  fs::remove(blocker);
}
