#pragma once
namespace mpscheck {
inline constexpr const char* kVersion = "0.1.0";
inline constexpr int kReportSchemaVersion = 1;
}  // namespace mpscheck
