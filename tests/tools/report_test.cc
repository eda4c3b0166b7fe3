// tools/report: the trace's named tracks, step track, kernel args,
// collectives and link series, and report.html's charts, from a small
// hand-made profile (exact values; the browser test renders real runs).

#include "tools/report.h"

#include <regex>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tpusim::tools {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

// 2 chips of one device, 2 device calls of 1 step (0-10 us, 10-20 us).
scenarios::TrainResult TwoChips() {
  scenarios::TrainResult r;
  r.backend = "sim";
  r.slice = "v5litepod-2";
  r.num_chips = 2;
  r.num_devices = 2;
  r.devices_per_chip = 1;
  r.num_replicas = 2;
  r.global_batch = 8;
  r.steps = 2;
  r.peak_flops_per_device = 1e12;
  r.model_flops_per_step = 1e6;
  runtime::Profile& p = r.profile;
  p.set_backend("sim");
  p.set_end_ps(20000000);
  for (int i = 0; i < 2; ++i) {
    runtime::StepProfile* st = p.add_steps();
    st->set_start_ps(i * 10000000);
    st->set_end_ps((i + 1) * 10000000);
    st->set_steps(1);
  }
  for (int d = 0; d < 2; ++d) {
    runtime::DeviceProfile* dp = p.add_devices();
    dp->set_device_id(d);
    dp->set_executions(2);
    // Device 1 is the straggler: more kernel time.
    (*dp->mutable_category_ps())["mxu"] = d == 0 ? 8000000 : 12000000;
    (*dp->mutable_category_ps())["collective"] = 2000000;
    dp->set_peak_hbm_bytes(3000);
    dp->set_hbm_capacity_bytes(16000);
    dp->mutable_peak_hbm_split()->set_weights(1000);
    dp->mutable_peak_hbm_split()->set_live_peak(2000);
    p.add_traced_devices(d);
    for (int i = 0; i < 2; ++i) {
      runtime::TimelineSpan* s = p.add_spans();
      s->set_device_id(d);
      s->set_name("fusion.1");
      s->set_category("mxu");
      s->set_start_ps(i * 10000000);
      s->set_end_ps(i * 10000000 + (d == 0 ? 4000000 : 6000000));
      s->set_flops(100);
      s->set_bytes(64);
      s->set_fused_ops(3);
      runtime::CollectiveSpan* c = p.add_collectives();
      c->set_device_id(d);
      c->set_name("all_reduce.2");
      c->set_op("all_reduce");
      c->set_algorithm("ring");
      c->set_bytes(32);
      c->set_start_ps(i * 10000000 + 4000000);
      c->set_end_ps(i * 10000000 + 7000000);
      c->set_exposed_ps(1000000);
    }
  }
  for (int chip = 0; chip < 2; ++chip) {
    for (int dir : {1, -1}) {
      runtime::LinkProfile* l = p.add_links();
      l->set_chip(chip);
      l->add_coords(chip);
      l->add_coords(0);
      l->add_coords(0);
      l->set_dim(0);
      l->set_direction(dir);
      // The +x link of chip 0 is busy 2 us of the first call, 6 us of the
      // second; the others are unused.
      const bool busy = chip == 0 && dir == 1;
      l->set_bytes(busy ? 800 : 0);
      l->set_busy_ps(busy ? 8000000 : 0);
      l->add_busy_ps_at_step_end(busy ? 2000000 : 0);
      l->add_busy_ps_at_step_end(busy ? 8000000 : 0);
    }
  }
  return r;
}

TEST(ReportTest, TraceNamesEveryTrackAndHasTheStepTrack) {
  const std::string trace = ChromeTrace(TwoChips());
  EXPECT_THAT(trace, HasSubstr("{\"ph\": \"M\", \"name\": \"process_name\", "
                               "\"pid\": 1, \"args\": {\"name\": \"chip 0 "
                               "(device 0)\"}}"));
  EXPECT_THAT(trace, HasSubstr("{\"ph\": \"M\", \"name\": \"thread_name\", "
                               "\"pid\": 2, \"tid\": 0, \"args\": {\"name\": "
                               "\"core 0 (device 1)\"}}"));
  EXPECT_THAT(trace, HasSubstr("{\"ph\": \"X\", \"name\": \"step 0\", \"cat\": "
                               "\"step\", \"pid\": 200000, \"tid\": 0, \"ts\": "
                               "0, \"dur\": 1e+01, \"args\": {\"steps\": 1, "
                               "\"warm_up\": true,"));
  EXPECT_THAT(trace, HasSubstr("\"name\": \"step 1\", \"cat\": \"step\", "
                               "\"pid\": 200000, \"tid\": 0, \"ts\": 1e+01, "
                               "\"dur\": 1e+01, \"args\": {\"steps\": 1, "
                               "\"warm_up\": false,"));
}

TEST(ReportTest, KernelSlicesCarryFlopsBytesAndFusedOps) {
  const std::string trace = ChromeTrace(TwoChips());
  EXPECT_THAT(trace, HasSubstr("{\"ph\": \"X\", \"name\": \"fusion.1\", "
                               "\"cat\": \"mxu\", \"pid\": 2, \"tid\": 0, "
                               "\"ts\": 1e+01, \"dur\": 6, \"args\": "
                               "{\"category\": \"mxu\", \"flops\": 100, "
                               "\"bytes\": 64, \"fused_ops\": 3}}"));
  EXPECT_EQ(Count(trace, "\"fused_ops\": 3"), 4);
}

TEST(ReportTest, CollectivesRunFromStartToDone) {
  const std::string trace = ChromeTrace(TwoChips());
  EXPECT_THAT(trace, HasSubstr("{\"ph\": \"b\", \"name\": \"all_reduce.2\", "
                               "\"cat\": \"collective\", \"id\": \"0x0\", "
                               "\"pid\": 1, \"tid\": 0, \"ts\": 4, \"args\": "
                               "{\"op\": \"all_reduce\", \"algorithm\": "
                               "\"ring\", \"bytes\": 32, \"exposed_us\": 1, "
                               "\"hidden_us\": 2}}"));
  EXPECT_THAT(trace, HasSubstr("{\"ph\": \"e\", \"name\": \"all_reduce.2\", "
                               "\"cat\": \"collective\", \"id\": \"0x0\", "
                               "\"pid\": 1, \"tid\": 0, \"ts\": 7}"));
  EXPECT_EQ(Count(trace, "\"ph\": \"b\""), 4);
  EXPECT_EQ(Count(trace, "\"ph\": \"e\""), 4);
}

TEST(ReportTest, LinkUtilisationIsATimeSeriesPerCall) {
  const std::string trace = ChromeTrace(TwoChips());
  // 2 us of 10, then 6 us of 10, then the closing 0; only the busy link.
  // (Times in json_writer's shortest form: 10 is "1e+01".)
  EXPECT_THAT(trace, HasSubstr("{\"ph\": \"C\", \"name\": \"link chip 0 "
                               "(0,0,0) +x\", \"pid\": 0, \"ts\": 0, \"args\": "
                               "{\"utilization\": 0.2}},\n{\"ph\": \"C\", "
                               "\"name\": \"link chip 0 (0,0,0) +x\", \"pid\": "
                               "0, \"ts\": 1e+01, \"args\": {\"utilization\": "
                               "0.6}},\n{\"ph\": \"C\", \"name\": \"link chip "
                               "0 (0,0,0) +x\", \"pid\": 0, \"ts\": 2e+01, "
                               "\"args\": {\"utilization\": 0}}"));
  EXPECT_EQ(Count(trace, "\"ph\": \"C\""), 3);
}

TEST(ReportTest, HtmlHasALegendABarPerStepAndACellPerLink) {
  const scenarios::TrainResult r = TwoChips();
  const RunStats stats = ComputeRunStats("two", r);
  const std::string html = HtmlReport(stats, r, "name: \"two\"");
  for (const std::string& c : BreakdownCategories()) {
    EXPECT_THAT(html, HasSubstr("<span data-category=\"" + c + "\">"));
  }
  // mxu: (8 + 12) / 2 devices / 2 steps = 5 ms... of a 10 us step: 0.005 ms.
  EXPECT_THAT(html, HasSubstr("</i>mxu <b class=\"value\">0.005 ms (50.0%)</b>"));
  EXPECT_EQ(Count(html, "<g class=\"step-bar\" data-step="), 2);
  EXPECT_EQ(Count(html, "data-warm-up=\"true\""), 1);
  EXPECT_EQ(Count(html, "<rect class=\"link\""), 4);
  // The busy link (40% of the run) at the top of a 0..40% scale is yellow;
  // unused links are grey; no near-white anywhere on the scale.
  EXPECT_THAT(html, HasSubstr("fill=\"#fde725\"><title>chip 0 (0,0,0) +x: "
                              "40.0% busy, 800 bytes</title>"));
  EXPECT_EQ(Count(html, "fill=\"#d9d9d9\"><title>chip"), 3);
  // The straggler (device 1, more kernel time) is the first device bar.
  const size_t first = html.find("<g class=\"device-bar\"><title>");
  ASSERT_NE(first, std::string::npos);
  EXPECT_EQ(html.substr(first, 45), "<g class=\"device-bar\"><title>device 1</title>");
  EXPECT_THAT(html, HasSubstr("<tr><td class=\"l\">fusion.1</td><td>0.005 ms"
                              "</td><td>5.000 us</td><td>100</td>"));
  EXPECT_THAT(html, HasSubstr("<tr><td class=\"l\">all_reduce.2</td><td "
                              "class=\"l\">all_reduce</td><td>32 B</td><td "
                              "class=\"l\">ring</td><td>3.000 us</td><td>1.000 "
                              "us</td><td>2.000 us</td></tr>"));
  EXPECT_THAT(html, HasSubstr("activations and temporaries</td><td>1.95312 KiB"));
  EXPECT_THAT(html, Not(HasSubstr("http:")));
  EXPECT_THAT(html, Not(HasSubstr("https:")));
}

// Issue 21: at pod scale the per-device chart bins devices but keeps the
// ends of the sorted order alone, so one straggler among 4096 is its own
// (first) bar.
TEST(ReportTest, AStragglerAmong4096DevicesIsTheFirstBar) {
  scenarios::TrainResult r = TwoChips();
  runtime::Profile& p = r.profile;
  p.clear_devices();
  for (int d = 0; d < 4096; ++d) {
    runtime::DeviceProfile* dp = p.add_devices();
    dp->set_device_id(d);
    dp->set_executions(2);
    (*dp->mutable_category_ps())["mxu"] = d == 2345 ? 16000000 : 8000000;
  }
  const std::string html = HtmlReport(ComputeRunStats("big", r), r, "");
  const size_t first = html.find("<g class=\"device-bar\"><title>");
  ASSERT_NE(first, std::string::npos);
  EXPECT_EQ(html.substr(first, 48),
            "<g class=\"device-bar\"><title>device 2345</title>");
  EXPECT_EQ(Count(html, "<g class=\"device-bar\">"), 512);
  EXPECT_THAT(html, HasSubstr("<g class=\"device-bar\"><title>8 devices "
                              "(ranks 8-15 by kernel time), mean</title>"));
  EXPECT_THAT(html, HasSubstr("4096 devices, busiest (kernel time) left; the 8 "
                              "at either end alone, the others in bins (mean)"));
}

}  // namespace
}  // namespace tpusim::tools
