// tests/strategy/data/test_files.h
//
// Test helpers: a fresh temporary directory per test and small file writers.

#ifndef TPUSIM_TESTS_STRATEGY_DATA_TEST_FILES_H_
#define TPUSIM_TESTS_STRATEGY_DATA_TEST_FILES_H_

#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace tpusim::data::testing {

// An empty directory unique to the running test (removed first if it exists).
inline std::string FreshTempDir() {
  const ::testing::TestInfo* info =
      ::testing::UnitTest::GetInstance()->current_test_info();
  std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / "tpusim_data" /
      (std::string(info->test_suite_name()) + "." + info->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

inline void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in),
                     std::istreambuf_iterator<char>());
}

}  // namespace tpusim::data::testing

#endif  // TPUSIM_TESTS_STRATEGY_DATA_TEST_FILES_H_
