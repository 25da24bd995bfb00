// The models users bring (issue 29 item 3): small BERT, GPT-2, T5 and ViT built by transformers
// from their configs with seeded weights (2 layers, hidden 64; nothing downloaded), exported the
// way docs/own-model.md tells users (scripts/export-hf.py), and run through --model on
// cpu, cpu:bfloat16 and sim:bfloat16. Each must reach a real verdict on every target: a pass, or a
// finding that the float64 gold run puts on the target; never exit 2, 5 or an error.
// Needs transformers (scripts/install-deps.sh --with-test-tools pins it); ctest runs this file as
// its own entry, integration_hf.
#include "harness.hpp"

#include <gtest/gtest.h>

#include <map>
#include <sstream>

using namespace mpscheck::testing;

namespace {

struct HfModel {
  std::string name;
  std::string export_args;  // after scripts/export-hf.py
  std::vector<std::string> inputs;
};

const std::vector<HfModel>& hf_models() {
  static const std::vector<HfModel> models = {
      {"bert",
       "bert --from-config --set num_hidden_layers=2 --set hidden_size=64 --set num_attention_heads=2 "
       "--set intermediate_size=128 --set vocab_size=1000 --set max_position_embeddings=64",
       {"int64[2,16]:0..1000", "int64[2,16]:0..2"}},
      {"gpt2",
       "gpt2 --from-config --auto-class AutoModelForCausalLM --set n_layer=2 --set n_embd=64 --set n_head=2 "
       "--set vocab_size=1000 --set n_positions=64",
       {"int64[2,16]:0..1000"}},
      {"t5",
       "t5 --from-config --auto-class T5EncoderModel --set num_layers=2 --set d_model=64 --set d_ff=128 "
       "--set num_heads=2 --set d_kv=32 --set vocab_size=1000",
       {"int64[2,16]:0..1000", "int64[2,16]:0..2"}},
      {"vit",
       "vit --from-config --set num_hidden_layers=2 --set hidden_size=64 --set num_attention_heads=2 "
       "--set intermediate_size=128 --set image_size=32 --set patch_size=8",
       {"float32[2,3,32,32]"}},
  };
  return models;
}

const std::vector<std::string> kInputNames[] = {
    {"input_ids", "attention_mask"}, {"input_ids"}, {"input_ids", "attention_mask"}, {"pixel_values"}};

class HuggingFace : public ::testing::TestWithParam<size_t> {
 protected:
  static void SetUpTestSuite() {
    dir_ = fresh_dir("huggingface-models");
    if (run_shell("python3 -c 'import transformers'", dir_).exit_code != 0) return;
    available_ = true;
    for (size_t i = 0; i < hf_models().size(); ++i) {
      const auto& m = hf_models()[i];
      std::string cmd = std::string("python3 ") + MPSCHECK_SOURCE_DIR + "/scripts/export-hf.py " + m.export_args +
                        " --dtypes bfloat16 -o " + m.name;
      for (size_t k = 0; k < m.inputs.size(); ++k) cmd += " --input " + kInputNames[i][k] + "=" + m.inputs[k];
      const auto r = run_shell(cmd, dir_);
      export_log_[m.name] = r.out + r.err;
      command_[m.name] = r.exit_code == 0 ? r.out : "";
    }
  }
  static inline std::string dir_;
  static inline bool available_ = false;
  static inline std::map<std::string, std::string> export_log_, command_;
};

}  // namespace

TEST_P(HuggingFace, ReachesARealVerdictOnEveryTarget) {
  if (!available_)
    FAIL() << "transformers is not installed (scripts/install-deps.sh --with-test-tools installs it; a missing test "
              "tool fails rather than skipping)";
  const HfModel& m = hf_models()[GetParam()];
  SCOPED_TRACE(m.name);
  ASSERT_FALSE(command_[m.name].empty()) << export_log_[m.name];
  // The helper prints the command line to run; run exactly its arguments, adding only the target.
  std::istringstream words(command_[m.name]);
  std::vector<std::string> printed;
  for (std::string w; words >> w;) {
    if (w.size() >= 2 && w.front() == '\'' && w.back() == '\'') w = w.substr(1, w.size() - 2);  // shell quoting
    printed.push_back(w);
  }
  ASSERT_GE(printed.size(), 3u);
  ASSERT_EQ(printed[0], "mpscheck");
  for (const std::string target : {"cpu", "cpu:bfloat16", "sim:bfloat16"}) {
    SCOPED_TRACE(target);
    const std::string dir = fresh_dir("hf-" + m.name + "-" + target.substr(0, 3) + target.substr(target.size() - 2));
    // Run where the files were exported, as the printed relative paths expect; reports go apart.
    std::vector<std::string> args(printed.begin() + 1, printed.end());
    args.insert(args.end(), {"--target", target, "--quick", "--min-time", "0", "--report-dir", dir + "/report",
                             "--json", dir + "/r.json"});
    if (target.rfind("sim", 0) == 0) args.insert(args.end(), {"--plugin-dir", test_plugins_dir() + "/sim"});
    const auto r = run_mpscheck(args, dir_);
    ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << "exit " << r.exit_code << ": " << r.out << r.err;
    const auto c = cases_by_id(read_json_file(dir + "/r.json")).at("model/torchscript/" + m.name + "/infer");
    const std::string status = c["status"].get<std::string>();
    RecordProperty(m.name + "_" + target, status);
    if (target == "cpu") {
      EXPECT_EQ(status, "pass") << c.dump();
      continue;
    }
    EXPECT_EQ(c["dtype"], "bfloat16");
    EXPECT_TRUE(status == "pass" || status == "mismatch" || status == "nan") << c.dump();
    // A finding stands only where float64 put the error on the target.
    if (status != "pass") {
      EXPECT_EQ(c["attribution"], "target") << c.dump();
    }
    for (const auto& o : c["outputs"]) EXPECT_EQ(o["target_dtype"], "bfloat16") << o.dump();
  }
}

INSTANTIATE_TEST_SUITE_P(Models, HuggingFace, ::testing::Range<size_t>(0, 4),
                         [](const ::testing::TestParamInfo<size_t>& info) { return hf_models()[info.param].name; });
