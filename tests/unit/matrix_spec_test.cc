// Axis tables (their defaults, as --describe prints them), reference pairing and the run's
// shared state: the fixtures the cluster families build their rows with.

#include "fixtures/matrix_spec.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fixtures/pairing.h"
#include "fixtures/run_state.h"

namespace kbench::bench {
namespace {

struct ToyParams {
  static constexpr std::string_view kFlag = "--toy";
  int size = 7;
  bool fast = false;
  std::string_view mode = "plain";
  int computed = -1;  // -1: decided per row
  SettingValues settings;
};

std::vector<AxisRow<ToyParams>> ToyAxes() {
  return {
      {"size", "bytes (default {})", ParseIntAxis<&ToyParams::size, 1, 100>,
       NameIfChanged<&ToyParams::size>, nullptr, AxisValue<&ToyParams::size>},
      {"fast", "true or false (default {}: careful)", nullptr, nullptr, nullptr,
       AxisValue<&ToyParams::fast>},
      {"mode", "plain or fancy", nullptr, NameAlways<&ToyParams::mode>, nullptr,
       AxisValue<&ToyParams::mode>},
      {"computed", "per row (default: whatever fits)", ParseIntAxis<&ToyParams::computed, 0, 9>,
       nullptr, nullptr, nullptr},
      SettingAxis<ToyParams, "wait_ms", "linger.ms", 5, 0, 100>("linger.ms (default {})"),
  };
}

TEST(AxisKeys, DefaultsComeFromTheParamsTheParserStartsFrom) {
  FamilyKeys keys = AxisKeys(ToyParams::kFlag, ToyAxes());
  EXPECT_EQ(keys.flag, "--toy");
  ASSERT_EQ(keys.keys.size(), 5u);
  EXPECT_EQ(keys.keys[0].help, "bytes (default 7)");
  EXPECT_EQ(keys.keys[0].default_value, "7");
  EXPECT_EQ(keys.keys[1].help, "true or false (default false: careful)");
  EXPECT_EQ(keys.keys[1].default_value, "false");
  EXPECT_EQ(keys.keys[2].help, "plain or fancy");  // no "{}": the help as it is
  EXPECT_EQ(keys.keys[2].default_value, "plain");
  EXPECT_EQ(keys.keys[3].help, "per row (default: whatever fits)");
  EXPECT_FALSE(keys.keys[3].default_value.has_value());
  EXPECT_EQ(keys.keys[4].help, "linger.ms (default 5)");
  EXPECT_EQ(keys.keys[4].default_value, "5");
}

TEST(AxisRows, IntegerKeysParseWithinTheirRangeAndNameWhenChanged) {
  ToyParams p;
  ParseIntAxis<&ToyParams::size, 1, 100>(p, "size", "42");
  EXPECT_EQ(p.size, 42);
  EXPECT_THROW((ParseIntAxis<&ToyParams::size, 1, 100>(p, "size", "101")), UsageError);
  BenchName name("Toy", "run");
  NameIfChanged<&ToyParams::size>(ToyParams{}, "size", name);
  NameIfChanged<&ToyParams::size>(p, "size", name);
  EXPECT_EQ(name.str(), "Toy/run/size:42");
}

// A setting axis is one row: it parses, names itself when changed and maps to its librdkafka
// setting, at its default when the spec does not set it.
TEST(AxisRows, SettingAxisIsTheWholeKey) {
  const std::vector<AxisRow<ToyParams>> axes = ToyAxes();
  const auto& wait = FindAxis(ToyParams::kFlag, axes, "wait_ms");
  ToyParams p;
  EXPECT_EQ(AxisSettings(axes, p), (ClientSettings{{"linger.ms", "5"}}));
  BenchName unchanged("Toy", "run");
  AddAxisNames(axes, p, unchanged);
  EXPECT_EQ(unchanged.str(), "Toy/run/mode:plain");
  wait.parse(p, "wait_ms", "42");
  wait.parse(p, "wait_ms", "7");  // the last value wins, as for a field
  EXPECT_EQ(wait.value(p), "7");
  EXPECT_EQ(AxisSettings(axes, p), (ClientSettings{{"linger.ms", "7"}}));
  BenchName changed("Toy", "run");
  AddAxisNames(axes, p, changed);
  EXPECT_EQ(changed.str(), "Toy/run/mode:plain/wait_ms:7");
  EXPECT_THROW(wait.parse(p, "wait_ms", "101"), UsageError);
  EXPECT_EQ(wait.value(ToyParams{}), "5");  // another Params is untouched
}

TEST(ParseSpecChoice, ReturnsTheChoiceOrSaysWhatIsValid) {
  constexpr std::array<std::string_view, 3> kAcks = {"0", "1", "all"};
  EXPECT_EQ(ParseSpecChoice("--toy", "acks", "1", kAcks), "1");
  try {
    (void)ParseSpecChoice("--toy", "acks", "2", kAcks);
    FAIL() << "no UsageError";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "--toy: acks must be 0, 1 or all, not '2'");
  }
}

TEST(PairedOrder, AReferenceRunsBesideItsTwinBeforeOrAfterIt) {
  const FamilyReference ref{"bare", "send", "send / bare"};
  // send:a, other:a, bare:b, send:b, bare:a (pairs: 0-4 and 2-3).
  const std::vector<PairableRow> rows = {
      {"send", "a"}, {"other", "a"}, {"bare", "b"}, {"send", "b"}, {"bare", "a"}};
  EXPECT_EQ(PairedOrder(rows, ref, false), (std::vector<std::size_t>{4, 0, 1, 2, 3}));
  EXPECT_EQ(PairedOrder(rows, ref, true), (std::vector<std::size_t>{0, 4, 1, 3, 2}));
}

TEST(RunState, TopicsAreNumberedPerRunAndOverridesNotedOnce) {
  RunState a, b;
  const std::string first = a.NextTopicName("produce");
  EXPECT_EQ(first.rfind("kbench-produce-", 0), 0u) << first;
  EXPECT_EQ(first.back(), '1');
  EXPECT_EQ(a.NextTopicName("produce").back(), '2');
  EXPECT_EQ(b.NextTopicName("produce"), first);  // a run of its own starts again
  EXPECT_TRUE(a.FirstOverrideOf("linger.ms"));
  EXPECT_FALSE(a.FirstOverrideOf("linger.ms"));
  EXPECT_TRUE(b.FirstOverrideOf("linger.ms"));
}

// The Codec pair's hand-off: taken once, only under its own key, and one set at a time.
TEST(RunState, CompressedSetIsTakenOnceUnderItsKeyAndReplacedByANewerOne) {
  RunState state;
  auto batches = [](std::string_view text) {
    std::vector<ByteBuffer> v(1);
    v[0].Assign(AsBytes(text));
    return v;
  };
  EXPECT_FALSE(state.TakeCompressed("gzip:6/az"));
  state.OfferCompressed("gzip:6/az", batches("first"));
  EXPECT_FALSE(state.TakeCompressed("gzip:1/az"));  // another level: not its bytes
  state.OfferCompressed("lz4:1/az", batches("second"));
  EXPECT_FALSE(state.TakeCompressed("gzip:6/az"));  // replaced
  auto taken = state.TakeCompressed("lz4:1/az");
  ASSERT_TRUE(taken);
  ASSERT_EQ(taken->size(), 1u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>((*taken)[0].data()), (*taken)[0].size()),
            "second");
  EXPECT_FALSE(state.TakeCompressed("lz4:1/az"));  // once
}

}  // namespace
}  // namespace kbench::bench
