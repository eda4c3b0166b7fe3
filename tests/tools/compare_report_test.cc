// tools/compare_report: stats.json reads back into the same RunStats, and the
// comparison table has a header and exact rows.

#include "tools/compare_report.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tpusim::tools {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

RunStats Example(int chips, double step_ms) {
  RunStats s;
  s.scenario = "x";
  s.backend = "sim";
  s.slice = chips == 4 ? "v4-8" : "v4-16";
  s.num_chips = chips;
  s.num_replicas = chips;
  s.global_batch = 8192;
  s.steps = 5;
  s.timed = true;
  s.step_ms_mean = step_ms;
  s.step_ms_p50 = step_ms;
  s.step_ms_p99 = step_ms;
  s.examples_per_second = s.global_batch / (step_ms * 1e-3);
  // The breakdown is a mean over every step, the warm-up included, which is
  // longer than the steps after it: shares are of that step (12.5 % each),
  // not of step_ms_mean (15 %).
  s.breakdown_step_ms = 1.2 * step_ms;
  const std::vector<std::string>& c = BreakdownCategories();
  for (size_t i = 0; i < c.size(); ++i) {
    s.breakdown_ms[c[i]] = s.breakdown_step_ms / 8;
  }
  s.mfu = 0.25;
  s.peak_hbm_bytes = int64_t{3} << 30;
  s.hbm_capacity_bytes = int64_t{32} << 30;
  LinkUse l;
  l.chip = 1;
  l.coords = {1, 0, 0};
  l.dim = 0;
  l.direction = -1;
  l.bytes = 1000;
  l.utilization = 0.5;
  s.busiest_links = {l};
  s.bottleneck = "The step is input-bound.";
  s.bottleneck_category = "input";
  s.bottleneck_share = 0.75;
  return s;
}

TEST(CompareReportTest, BreakdownCategoriesAreTheSimulatorsThenIdle) {
  EXPECT_THAT(BreakdownCategories(),
              ::testing::ElementsAre("mxu", "vector", "memory", "collective",
                                     "infeed", "input", "host", "idle"));
}

TEST(CompareReportTest, StatsJsonReadsBack) {
  const RunStats s = Example(4, 100);
  absl::StatusOr<RunStats> back = ReadStatsJson(StatsJson(s).Dump(), "a");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->slice, "v4-8");
  EXPECT_EQ(back->num_chips, 4);
  EXPECT_EQ(back->num_replicas, 4);
  EXPECT_EQ(back->global_batch, 8192);
  EXPECT_EQ(back->step_ms_mean, 100);
  EXPECT_EQ(back->examples_per_second, 81920);
  EXPECT_EQ(back->breakdown_ms, s.breakdown_ms);
  EXPECT_EQ(back->breakdown_step_ms, 120);
  EXPECT_EQ(back->mfu, 0.25);
  EXPECT_EQ(back->peak_hbm_bytes, int64_t{3} << 30);
  EXPECT_EQ(back->hbm_capacity_bytes, int64_t{32} << 30);
  EXPECT_EQ(back->bottleneck_category, "input");
  EXPECT_EQ(back->bottleneck_share, 0.75);
  ASSERT_EQ(back->busiest_links.size(), 1u);
  EXPECT_EQ(back->busiest_links[0].coords, std::vector<int>({1, 0, 0}));
  EXPECT_EQ(back->busiest_links[0].direction, -1);
  EXPECT_EQ(back->busiest_links[0].utilization, 0.5);
  EXPECT_EQ(StatsJson(*back).Dump(), StatsJson(s).Dump());
}

TEST(CompareReportTest, NotAStatsFileIsAnErrorNamingIt) {
  EXPECT_EQ(ReadStatsJson("{\"traceEvents\": []}", "t.json").status().message(),
            "t.json: schema=\"\": not a run's stats (want tpusim.run.stats/N, "
            "as `tpusim run --out DIR` writes DIR/stats.json)");
  EXPECT_EQ(ReadStatsJson("{\"schema\": \"tpusim.run.stats/1\"}", "s.json")
                .status()
                .message(),
            "s.json: chips is missing or not a number");
  EXPECT_EQ(ReadStatsJson("nope", "n.json").status().message(),
            "n.json: not JSON: JSON: at byte 0: expected a value, found 'n'");
}

TEST(CompareReportTest, TextHasAHeaderAndOneRowPerRun) {
  std::vector<ComparedRun> runs(3);
  runs[0].label = "cluster.slice=v4-8";
  runs[0].stats = Example(4, 100);
  runs[1].label = "cluster.slice=v4-16";
  runs[1].stats = Example(8, 50);
  runs[2].label = "cluster.slice=v4-12";
  runs[2].ok = false;
  runs[2].error = "tpusim run: INVALID_ARGUMENT: bad";
  EXPECT_EQ(
      CompareText(runs),
      "  #  run                  chips replicas batch/rep     step ms  "
      "examples/s  ex/s/chip    MFU   mxu%   vec%   mem%  coll% infeed% "
      "input%  host%  idle%  peak HBM of capacity  bottleneck\n"
      "  0  cluster.slice=v4-8       4        4      2048     100.000     "
      "81920.0    20480.0  25.0%   12.5   12.5   12.5   12.5   12.5   12.5   "
      "12.5   12.5      3.00 of  32.00 GiB  input 75.0% of the critical path\n"
      "  1  cluster.slice=v4-16      8        8      1024      50.000    "
      "163840.0    20480.0  25.0%   12.5   12.5   12.5   12.5   12.5   12.5   "
      "12.5   12.5      3.00 of  32.00 GiB  input 75.0% of the critical path\n"
      "  2  cluster.slice=v4-12  FAILED: tpusim run: INVALID_ARGUMENT: bad\n");
}

TEST(CompareReportTest, JsonAndCsvRows) {
  std::vector<ComparedRun> runs(2);
  runs[0].label = "a";
  runs[0].stats = Example(4, 100);
  runs[1].label = "b";
  runs[1].ok = false;
  runs[1].error = "boom";
  const std::string json = CompareJson(runs, {{"x=1"}, {"x=2"}}).Dump();
  EXPECT_THAT(json, HasSubstr("\"chips\": 4, "));
  EXPECT_THAT(json, HasSubstr("\"examples_per_second_per_chip\": 2.048e+04, "));
  EXPECT_THAT(json, HasSubstr("\"per_replica_batch\": 2048, \"point\": 0, "
                              "\"replicas\": 4, \"set\": [\"x=1\"]"));
  EXPECT_THAT(json, HasSubstr("{\"error\": \"boom\", \"ok\": false, \"point\": "
                              "1, \"set\": [\"x=2\"]}"));
  EXPECT_EQ(CompareCsv(runs),
            "point,set,chips,replicas,per_replica_batch,step_ms,examples_per_s,"
            "examples_per_s_per_chip,mfu,mxu_ms,vector_ms,memory_ms,"
            "collective_ms,infeed_ms,input_ms,host_ms,idle_ms,peak_hbm_bytes,"
            "hbm_capacity_bytes,bottleneck_category,bottleneck_share,"
            "bottleneck,error\n"
            "0,\"a\",4,4,2048,1e+02,8.192e+04,2.048e+04,0.25,15,15,15,15,15,"
            "15,15,15,3221225472,34359738368,\"input\",0.75,\"The step "
            "is input-bound.\",\"\"\n"
            "1,\"b\",,,,,,,,,,,,,,,,,,\"\",,\"\",\"boom\"\n");
}

TEST(CompareReportTest, HtmlDrawsEveryRunOnOneScaleWithoutTheNetwork) {
  std::vector<ComparedRun> runs(2);
  runs[0].label = "a";
  runs[0].report_href = "point-0/report.html";
  runs[0].stats = Example(4, 100);
  runs[1].label = "b<";
  runs[1].stats = Example(8, 50);
  const std::string html = CompareHtml("t", runs);
  // The slowest run's bar is the full 640 px; the other's segments are half.
  EXPECT_THAT(html, HasSubstr("<rect class=\"seg\" data-run=\"0\" "
                              "data-category=\"mxu\" x=\"260.00\" y=\"4\" "
                              "width=\"80.00\""));
  EXPECT_THAT(html, HasSubstr("<rect class=\"seg\" data-run=\"1\" "
                              "data-category=\"mxu\" x=\"260.00\" y=\"32\" "
                              "width=\"40.00\""));
  EXPECT_THAT(html, HasSubstr("<a href=\"point-0/report.html\">a</a>"));
  EXPECT_THAT(html, HasSubstr("b&lt;"));
  for (const std::string& c : BreakdownCategories()) {
    EXPECT_THAT(html, HasSubstr("<span data-category=\"" + c + "\">"));
  }
  EXPECT_THAT(html, HasSubstr("<tr><td>1</td><td class=\"l\">chip 1 (1,0,0) -x"
                              "</td><td>50.0%</td><td>1000 B</td></tr>"));
  EXPECT_THAT(html, Not(HasSubstr("http:")));
  EXPECT_THAT(html, Not(HasSubstr("https:")));
  EXPECT_THAT(html, Not(HasSubstr("<script")));
}

}  // namespace
}  // namespace tpusim::tools
