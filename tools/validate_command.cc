#include "tools/validate_command.h"

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "scenarios/scenario_loader.h"
#include "scenarios/train_runner.h"
#include "sim/validation.h"
#include "tools/child_process.h"
#include "tools/json_writer.h"

namespace tpusim::tools {
namespace {

struct Row {
  const char* id;
  const char* what;
  double published;     // seconds (or, for the C.4 rows, the ratio 1)
  const char* unit;     // "ms", "us" or "ratio"
  const char* source;
  // Simulated value in the row's unit; empty when not expressible.
  std::function<absl::StatusOr<double>()> run;
  const char* not_expressible = "";
};

const std::vector<Row>& Rows() {
  static const auto* rows = new std::vector<Row>{
      {"B.6-matmul",
       "v2-8 FFW matmul [32,1024,8192]x[8192,32768] bf16, 4 DP x 2 MP, per core",
       96, "ms", "sheet B.6 (scaling book, profile)",
       []() -> absl::StatusOr<double> {
         TPUSIM_ASSIGN_OR_RETURN(double s, sim::B6FfwMatmulSeconds());
         return s * 1e3;
       }},
      {"B.6-reduce-scatter",
       "v2 reduce-scatter of 134 MB between neighbouring chips", 1.13, "ms",
       "sheet B.6 (scaling book, profile)",
       []() -> absl::StatusOr<double> {
         TPUSIM_ASSIGN_OR_RETURN(double s, sim::B6ReduceScatterSeconds());
         return s * 1e3;
       }},
      {"B.5-all-gather", "v5e 8x4 all_gather over Y, bf16[2048,8192]", 680,
       "us", "sheet B.5 (scaling book)",
       []() -> absl::StatusOr<double> {
         TPUSIM_ASSIGN_OR_RETURN(double s,
                                 sim::B5AllGatherSeconds(2048LL * 8192 * 2));
         return s * 1e6;
       }},
      {"B.5-all-gather-small", "v5e 8x4 all_gather over Y, bf16[256,256]", 8,
       "us", "sheet B.5 (scaling book)",
       []() -> absl::StatusOr<double> {
         TPUSIM_ASSIGN_OR_RETURN(double s, sim::B5AllGatherSeconds(256 * 256 * 2));
         return s * 1e6;
       }},
      {"C.4-v3-32", "data-parallel MLP step vs the C.4 step model, v3-32", 1,
       "ratio", "sheet C.4 (analytical)",
       []() -> absl::StatusOr<double> {
         TPUSIM_ASSIGN_OR_RETURN(sim::C4Result r, sim::C4DataParallelStep("v3-32"));
         return r.simulated / r.model;
       }},
      {"C.4-v4-32", "data-parallel MLP step vs the C.4 step model, v4-32", 1,
       "ratio", "sheet C.4 (analytical)",
       []() -> absl::StatusOr<double> {
         TPUSIM_ASSIGN_OR_RETURN(sim::C4Result r, sim::C4DataParallelStep("v4-32"));
         return r.simulated / r.model;
       }},
      {"B.2", "MLPerf v2.0 ResNet-50 step on v4-8192 (4096 chips), batch 8/chip",
       4.3, "ms", "sheet B.2 (MLPerf v2.0 result log)",
       []() -> absl::StatusOr<double> {
         // The configuration of sheet B.2: global batch 32768, bf16.
         TPUSIM_ASSIGN_OR_RETURN(
             scenarios::LoadedScenario s,
             scenarios::ParseScenario(
                 "name: \"B.2\" cluster { slice: \"v4-8192\" } "
                 "global_batch_size: 32768 run { workload { name: "
                 "\"resnet50\" params { key: \"dtype\" value: "
                 "\"bfloat16\" } } steps: 1 }",
                 "B.2", ""));
         TPUSIM_ASSIGN_OR_RETURN(scenarios::TrainResult r,
                                 scenarios::RunTraining(s, {}));
         const auto& step = r.profile.steps(r.profile.steps_size() - 1);
         return (step.end_ps() - step.start_ps()) * 1e-9;
       }},
      {"B.7", "MaxText MFU on v5p (32B on v5p-128: 67.8%)", 67.8, "%MFU",
       "sheet B.7 (MaxText README)", nullptr,
       "not expressible: MaxText's v5p 32B config (global_parameter_scale=32: 32 layers, d_model 8192, 64 heads, gated MLP 28672, seq 2048, 7 sequences per chip, FSDP x tensor 4, remat minimal, flash attention) run as transformer_lm with FSDP needs 449 GB of HBM per chip (the [7,64,2048,2048] attention scores of every layer stay live for the backward pass); the workload has neither rematerialisation, flash attention nor tensor parallelism"},
      {"B.9", "v4 480B dense transformer, 63% computational efficiency", 63,
       "%", "sheet B.9 (Google blog, secondary)", nullptr,
       "a 480B dense model on 2048 chips needs pipeline or tensor parallelism and rematerialisation, which the workloads do not express"},
  };
  return *rows;
}

absl::Status RunValidate(const ParsedArgs& args, std::ostream& out) {
  if (args.Has("row")) {
    // Child mode: one case in this process.
    const std::string id = args.Get("row");
    for (const Row& row : Rows()) {
      if (id != row.id) continue;
      if (!row.run) {
        return absl::InvalidArgumentError(
            absl::StrCat("--row=", id, ": not expressible: ", row.not_expressible));
      }
      TPUSIM_ASSIGN_OR_RETURN(double v, row.run());
      out << absl::StrFormat("%.17g\n", v);
      return absl::OkStatus();
    }
    return absl::InvalidArgumentError(absl::StrCat("--row=", id, ": unknown row"));
  }
  const std::string format = args.Get("format", "text");
  if (format != "text" && format != "json") {
    return UsageError(absl::StrCat("--format=", format, " must be text or json"));
  }
  TPUSIM_ASSIGN_OR_RETURN(int64_t jobs, args.GetInt("jobs", 2, 1));
  std::vector<std::vector<std::string>> commands;
  std::vector<size_t> which;
  for (size_t i = 0; i < Rows().size(); ++i) {
    if (!Rows()[i].run) continue;
    commands.push_back({"validate", absl::StrCat("--row=", Rows()[i].id)});
    which.push_back(i);
  }
  const std::vector<ChildResult> results =
      RunSelf(commands, static_cast<int>(jobs));
  std::vector<double> value(Rows().size(), 0);
  std::vector<std::string> error(Rows().size());
  for (size_t k = 0; k < which.size(); ++k) {
    const ChildResult& r = results[k];
    double v = 0;
    if (r.exit_code == 0 &&
        absl::SimpleAtod(absl::StripAsciiWhitespace(r.out), &v)) {
      value[which[k]] = v;
    } else {
      error[which[k]] = std::string(absl::StripTrailingAsciiWhitespace(r.err));
      if (error[which[k]].empty()) error[which[k]] = "failed";
    }
  }
  std::vector<Json> rows;
  std::string text = absl::StrFormat("%-22s %-70s %12s %12s %8s\n", "target",
                                     "what", "predicted", "published", "error");
  bool all_ran = true;
  for (size_t i = 0; i < Rows().size(); ++i) {
    const Row& row = Rows()[i];
    std::map<std::string, Json> j = {{"id", Json::String(row.id)},
                                     {"what", Json::String(row.what)},
                                     {"source", Json::String(row.source)},
                                     {"unit", Json::String(row.unit)},
                                     {"published", Json::Float64(row.published)}};
    if (!row.run) {
      absl::StrAppendFormat(&text, "%-22s %-70s %12s %9.4g %-2s %8s  (%s)\n",
                            row.id, row.what, "-", row.published, row.unit,
                            "-", row.not_expressible);
      j["not_expressible"] = Json::String(row.not_expressible);
    } else if (!error[i].empty()) {
      all_ran = false;
      absl::StrAppendFormat(&text, "%-22s %-70s FAILED: %s\n", row.id, row.what,
                            error[i]);
      j["error"] = Json::String(error[i]);
    } else {
      const double err = value[i] / row.published - 1;
      absl::StrAppendFormat(&text, "%-22s %-70s %9.4g %-2s %9.4g %-2s %+7.1f%%\n",
                            row.id, row.what, value[i], row.unit, row.published,
                            row.unit, 100 * err);
      j["predicted"] = Json::Float64(value[i]);
      j["error"] = Json::Float64(err);
    }
    rows.push_back(Json::Object(std::move(j)));
  }
  if (format == "json") {
    out << Json::Array(std::move(rows)).Dump() << "\n";
  } else {
    out << text;
  }
  if (!all_ran) return absl::AbortedError("validate: a case could not run");
  return absl::OkStatus();
}

}  // namespace

Subcommand ValidateCommand() {
  Subcommand s;
  s.name = "validate";
  s.summary = "compare the model with the published targets (reports, never gates)";
  s.usage = "tpusim validate [--jobs N] [--format=text|json]";
  s.flags = {
      {"jobs", true, "cases run at once (default 2)"},
      {"format", true, "text (default) or json"},
      {"row", true, "run one case in this process and print its value (internal)"},
  };
  s.run = &RunValidate;
  return s;
}

}  // namespace tpusim::tools
