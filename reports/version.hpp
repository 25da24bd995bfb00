// mpscheck's own version and the version of its JSON report's schema: the host's, written into
// every report and checked when one is read back (reports/json_report.cpp). Not part of the plugin
// SDK: a plugin declares its own version in MPSCHECK_PLUGIN and is matched to the host by
// kPluginApiVersion (include/mpscheck/plugin.hpp), never by these.
#pragma once
namespace mpscheck {
inline constexpr const char* kVersion = "0.1.0";
inline constexpr int kReportSchemaVersion = 2;  // 2: a model case's op_replay (checks/op_calls.hpp)
}  // namespace mpscheck
