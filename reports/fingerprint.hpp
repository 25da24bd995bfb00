// Known-issue fingerprints: what makes two findings the same upstream bug. A fingerprint is the
// op, the dtype, the layout, the status and the error's signature (its message with the numbers,
// addresses and sizes taken out). A table of fingerprints (expectations/known-issues.tsv) maps them
// to upstream issues, with the versions they were fixed in or are still broken in; reports say
// "known: pytorch#NNNN (fixed in 2.14)" or "new", and group findings by fingerprint so one upstream
// report covers them. Plain data, no LibTorch.
#pragma once

#include "checks/result.hpp"

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>
#include <vector>

namespace mpscheck {

struct Fingerprint {
  std::string op;         // "op/unary/exp", "model/vae"
  std::string dtype;      // "f16"; "model" for a model
  std::string layout;     // "transposed", "contiguous"; a model's mode ("train")
  std::string status;     // "mismatch"
  std::string signature;  // the error signature (error_signature), or for numbers the failing outputs / layer
  // "op/unary/exp f16 transposed mismatch out", one line.
  std::string text() const;
};

// A message with what changes from run to run taken out: numbers become '#', hex addresses '0x#',
// quoted sizes and shapes with them; at most 120 characters, lower case.
std::string error_signature(const std::string& message);

Fingerprint fingerprint_of(const CaseResult& c);

struct KnownIssue {
  int line = 0;
  std::string op, dtype, layout, status, signature;  // op: a regex on the whole op; "*" = any; signature: a substring
  std::string issue;                                 // "pytorch#NNNN" (owner/repo#N or name#N)
  std::string fixed_in;                              // a version, or "-" / empty
  std::string broken_in;                             // the latest version known broken, or "-" / empty
  std::string note;
};

struct KnownIssuesError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Tab- or space-separated: OP DTYPE LAYOUT STATUS ISSUE FIXED_IN BROKEN_IN [SIGNATURE...] [# note];
// '#' lines are comments. Throws KnownIssuesError naming FILE:LINE.
std::vector<KnownIssue> parse_known_issues(const std::string& text, const std::string& file_name);
std::vector<KnownIssue> load_known_issues(const std::string& path);

// The first row matching `fp`, or null.
const KnownIssue* match_known_issue(const std::vector<KnownIssue>& table, const Fingerprint& fp);

// "known: pytorch#NNNN (fixed in 2.14)", "known: pytorch#NNNN (still broken in 2.13)", "new".
std::string known_text(const KnownIssue* issue);

struct FingerprintGroup {
  Fingerprint fingerprint;
  std::string known;                        // known_text of its row
  std::vector<const CaseResult*> findings;  // by id
};
// The run's findings grouped by fingerprint against `table`, the largest group first, then by text.
std::vector<FingerprintGroup> findings_by_fingerprint(const std::vector<CaseResult>& cases,
                                                      const std::vector<KnownIssue>& table);

// The groups as JSON for report.json's "fingerprints".
nlohmann::json fingerprints_json(const std::vector<FingerprintGroup>& groups);

}  // namespace mpscheck
