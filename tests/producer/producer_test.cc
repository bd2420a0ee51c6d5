// Unit and mock-cluster tests of the producer driver, its statistics parsing and the
// latency histogram it reports from.

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "fixtures/cluster.h"
#include "harness/admin.h"
#include "harness/consumer.h"
#include "harness/histogram.h"
#include "harness/payload.h"
#include "harness/producer.h"
#include "harness/rdkafka_stats.h"

namespace kbench {
namespace {

// ------------------------------------------------------------------ histogram

TEST(LatencyHistogram, UniformPercentilesWithinBucketError) {
  LatencyHistogram h;
  for (std::uint64_t v = 1; v <= 100000; ++v) h.Record(v);
  for (double q : {0.5, 0.95, 0.99, 0.999}) {
    double expected = q * 100000;
    double got = static_cast<double>(h.Percentile(q));
    EXPECT_GE(got, expected) << q;              // upper bound of the bucket
    EXPECT_LE(got, expected * 1.008 + 1) << q;  // 7 sub-bits: < 0.8 % relative error
  }
  EXPECT_EQ(h.max(), 100000u);
  EXPECT_EQ(h.min(), 1u);
  EXPECT_DOUBLE_EQ(h.mean(), 50000.5);
}

TEST(LatencyHistogram, SmallValuesAreExact) {
  LatencyHistogram h;
  for (int i = 0; i < 90; ++i) h.Record(10);
  for (int i = 0; i < 10; ++i) h.Record(100);
  EXPECT_EQ(h.Percentile(0.5), 10u);
  EXPECT_EQ(h.Percentile(0.9), 10u);
  EXPECT_EQ(h.Percentile(0.91), 100u);
  EXPECT_EQ(h.Percentile(1.0), 100u);
}

TEST(LatencyHistogram, ExponentialTailAndMergeMatchOneHistogram) {
  // Exponential with mean 1000 µs: p99 = 1000 * ln(100) ≈ 4605 µs.
  std::mt19937_64 rng(42);
  std::exponential_distribution<double> exp(1.0 / 1000.0);
  LatencyHistogram all, a, b;
  for (int i = 0; i < 200000; ++i) {
    auto v = static_cast<std::uint64_t>(exp(rng));
    all.Record(v);
    (i % 2 ? a : b).Record(v);
  }
  a.Merge(b);
  EXPECT_EQ(a.count(), all.count());
  for (double q : {0.5, 0.99, 0.999}) EXPECT_EQ(a.Percentile(q), all.Percentile(q));
  EXPECT_NEAR(static_cast<double>(all.Percentile(0.99)), 4605.0, 4605.0 * 0.05);
  EXPECT_NEAR(static_cast<double>(all.Percentile(0.5)), 693.0, 693.0 * 0.05);
}

// ------------------------------------------------------------------ statistics

// Trimmed from a real librdkafka 2.0.2 emit: two brokers (one internal), one topic.
constexpr const char* kSampleStats = R"({
  "name": "rdkafka#producer-1", "type": "producer", "ts": 1, "time": 2,
  "txmsgs": 20000, "txmsg_bytes": 2000000, "rxmsgs": 0, "rxmsg_bytes": 0,
  "brokers": {
    "GroupCoordinator": {"nodeid": -1, "txbytes": 0, "txretries": 0, "txerrs": 0, "req": {}},
    "127.0.0.1:39421/1": {"nodeid": 1, "txbytes": 2100500, "txretries": 3, "txerrs": 1,
      "req": {"Produce": 41, "Metadata": 2, "ApiVersion": 1},
      "rtt": {"min": 100, "max": 900, "avg": 300, "sum": 12300, "cnt": 41}},
    "127.0.0.1:39422/2": {"nodeid": 2, "txbytes": 1000, "txretries": 1, "txerrs": 0,
      "req": {"Metadata": 1}}
  },
  "topics": {
    "t1": {"topic": "t1",
      "batchsize": {"min": 100, "max": 70000, "avg": 50000, "sum": 2050000, "cnt": 41},
      "batchcnt": {"min": 1, "max": 700, "avg": 487, "sum": 20000, "cnt": 41},
      "partitions": {}}
  }
})";

TEST(RdkafkaStats, ParsesCountersAndWindows) {
  RdkafkaStats s;
  ASSERT_TRUE(ParseRdkafkaStats(kSampleStats, &s).ok());
  EXPECT_EQ(s.txmsgs, 20000);
  EXPECT_EQ(s.txmsg_bytes, 2000000);
  EXPECT_EQ(s.tx_wire_bytes, 2101500);
  EXPECT_EQ(s.produce_requests, 41);
  EXPECT_EQ(s.txretries, 4);
  EXPECT_EQ(s.txerrs, 1);
  EXPECT_EQ(s.batch_bytes.cnt, 41);
  EXPECT_DOUBLE_EQ(s.batch_bytes.average(), 50000.0);
  EXPECT_DOUBLE_EQ(s.batch_records.average(), 20000.0 / 41);
}

TEST(RdkafkaStats, RejectsMalformedInput) {
  RdkafkaStats s;
  EXPECT_FALSE(ParseRdkafkaStats("", &s).ok());
  EXPECT_FALSE(ParseRdkafkaStats("{\"txmsgs\": ", &s).ok());
  EXPECT_FALSE(ParseRdkafkaStats("[1,2]", &s).ok());
  Status bad = ParseRdkafkaStats(R"({"txmsgs": "many"})", &s);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("txmsgs"), std::string::npos);
  EXPECT_TRUE(ParseRdkafkaStats("{}", &s).ok());  // a handle before any broker is known
  EXPECT_EQ(s.tx_wire_bytes, 0);
}

TEST(RdkafkaStats, WindowsAddUpAcrossEmitsCumulativesDo_Not) {
  StatsAccumulator acc;
  RdkafkaStats e1, e2;
  ASSERT_TRUE(ParseRdkafkaStats(kSampleStats, &e1).ok());
  e2 = e1;
  e2.tx_wire_bytes += 500;
  auto before = acc.Get();
  acc.Add(e1);
  acc.Add(e2);
  StatsDelta d = Difference(before, acc.Get());
  EXPECT_EQ(d.wire_bytes, 2102000);  // latest cumulative value
  EXPECT_EQ(d.batch_bytes.cnt, 82);  // windows summed
}

// ------------------------------------------------------------------ mock cluster

struct MockRun {
  explicit MockRun(bench::TopicLayout layout = {2, 1})
      : cluster(bench::Options{}, "test", layout),
        records(PayloadGenerator(ParsePayloadSpec("az"), SizeSpec{100, 100}, 1).Generate(1000)) {}

  ProducerOptions Options(int threads, int producers, ClientSettings extra = {}) const {
    ProducerOptions o;
    o.settings = cluster.BaseSettings();
    o.settings.insert(
        o.settings.end(),
        {{"statistics.interval.ms", "100"}, {"message.timeout.ms", "20000"}, {"linger.ms", "5"}});
    o.settings.insert(o.settings.end(), extra.begin(), extra.end());
    o.topic = cluster.topic();
    o.threads = threads;
    o.producers = producers;
    o.progress_interval = std::chrono::milliseconds(0);
    return o;
  }
  std::int64_t EndOffsets() const {
    std::int64_t sum = -1;
    EXPECT_TRUE(cluster.EndOffsetSum(&sum).ok());
    return sum;
  }

  bench::BenchCluster cluster;
  RecordSet records;
};

std::unique_ptr<ProducerDriver> MakeDriver(const MockRun& run, const ProducerOptions& o) {
  std::string error;
  auto d = ProducerDriver::Create(o, run.records, &error);
  EXPECT_TRUE(d) << error;
  return d;
}

TEST(ProducerDriverMock, EveryRecordAccountedForAcrossSharedProducers) {
  MockRun run;
  auto d = MakeDriver(run, run.Options(3, 2));
  ASSERT_TRUE(d);
  d->BeginMeasurement();
  ASSERT_TRUE(d->RunRound(10001).ok());
  ASSERT_TRUE(d->RunRound(5000).ok());
  ProduceTotals t = d->Collect();
  EXPECT_EQ(t.produced, 15001);
  EXPECT_EQ(t.delivered, 15001);
  EXPECT_EQ(t.failed, 0);
  EXPECT_EQ(t.AccountingError(), "");
  EXPECT_EQ(t.value_bytes, 15001 * 100);
  EXPECT_EQ(static_cast<std::int64_t>(t.latency.count()), 15001);
  EXPECT_EQ(run.EndOffsets(), 15001);
  EXPECT_GT(t.stats.wire_bytes, t.value_bytes);
  EXPECT_GT(t.stats.produce_requests, 0);
  EXPECT_GT(t.stats.batch_records.average(), 1.0);
  EXPECT_EQ(t.stats_error, "");
  EXPECT_EQ(t.stats.txmsgs, 15001);  // nothing re-sent without errors
  EXPECT_EQ(t.retries(), 0);
  // Collect restarts the measurement.
  ProduceTotals empty = d->Collect();
  EXPECT_EQ(empty.produced, 0);
}

TEST(ProducerDriverMock, RejectsBadShapes) {
  MockRun run;
  std::string error;
  EXPECT_FALSE(ProducerDriver::Create(run.Options(2, 3), run.records, &error));
  EXPECT_NE(error.find("producers"), std::string::npos);
  EXPECT_FALSE(ProducerDriver::Create(run.Options(1, 1, {{"statistics.interval.ms", "0"}}),
                                      run.records, &error));
  EXPECT_NE(error.find("statistics.interval.ms"), std::string::npos);
}

TEST(ProducerDriverMock, BrokerRttShowsUpInLatency) {
  MockRun run;
  for (int broker = 1; broker <= 3; ++broker)
    rd_kafka_mock_broker_set_rtt(run.cluster.mock(), broker, 50);
  auto d = MakeDriver(run, run.Options(1, 1));
  ASSERT_TRUE(d);
  d->BeginMeasurement();
  ASSERT_TRUE(d->RunRound(2000).ok());
  ProduceTotals t = d->Collect();
  EXPECT_EQ(t.AccountingError(), "");
  EXPECT_GE(t.latency.Percentile(0.5), 50000u);  // every record waits at least one RTT
}

TEST(ProducerDriverMock, TransportErrorsAreRetriedWithNothingLostWithIdempotence) {
  MockRun run;
  auto d = MakeDriver(run, run.Options(2, 1, {{"enable.idempotence", "true"}, {"acks", "all"}}));
  ASSERT_TRUE(d);
  d->BeginMeasurement();
  ASSERT_TRUE(d->RunRound(1000).ok());  // connected, producer id assigned
  // The next Produce requests are answered by a dropped connection (records are re-queued
  // at message level) and by a retriable broker error (the request is retried: txretries).
  rd_kafka_mock_push_request_errors(
      run.cluster.mock(), 0 /* Produce */, 4, RD_KAFKA_RESP_ERR__TRANSPORT,
      RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS, RD_KAFKA_RESP_ERR__TRANSPORT,
      RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS);
  ASSERT_TRUE(d->RunRound(20000).ok());
  ProduceTotals t = d->Collect();
  EXPECT_EQ(t.AccountingError(), "");
  EXPECT_EQ(t.delivered, 21000);
  EXPECT_GT(t.retries(), 0);
  EXPECT_EQ(run.EndOffsets(), 21000);  // idempotence: retries add no duplicates
}

TEST(ProducerDriverMock, BrokerThatCannotTakeTheCodecFailsTheCheck) {
  MockRun run;
  // Produce v6 predates zstd (v7): librdkafka falls back to uncompressed batches.
  rd_kafka_mock_set_apiversion(run.cluster.mock(), 0 /* Produce */, 0, 6);
  auto d = MakeDriver(run, run.Options(1, 1, {{"compression.codec", "zstd"}}));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->requested_codec(), "zstd");
  d->BeginMeasurement();
  ASSERT_TRUE(d->RunRound(2000).ok());
  ProduceTotals t = d->Collect();
  EXPECT_EQ(t.AccountingError(), "");
  EXPECT_NE(t.codec_fallback.find("lacks the ZSTD feature"), std::string::npos) << t.codec_fallback;
  // ... and the batches really went uncompressed: az letters would compress to about 0.6.
  EXPECT_GT(t.stats.batch_bytes.sum / static_cast<double>(t.stats.txmsg_bytes), 1.0);
}

TEST(ProducerDriverMock, CodecAcceptedLeavesNoFallbackAndCompresses) {
  MockRun run;
  auto d = MakeDriver(run, run.Options(1, 1, {{"compression.codec", "zstd"}}));
  ASSERT_TRUE(d);
  d->BeginMeasurement();
  ASSERT_TRUE(d->RunRound(5000).ok());
  ProduceTotals t = d->Collect();
  EXPECT_EQ(t.codec_fallback, "");
  // az letters compress to about 0.6 with zstd; uncompressed batches would be above 1.
  EXPECT_LT(t.stats.batch_bytes.sum / static_cast<double>(t.stats.txmsg_bytes), 0.8);
}

TEST(ProducerDriverMock, DeadBrokerFailsWithUndeliveredCount) {
  MockRun run({1, 1});
  auto d = MakeDriver(run, run.Options(1, 1, {{"message.timeout.ms", "1500"}}));
  ASSERT_TRUE(d);
  d->BeginMeasurement();
  ASSERT_TRUE(d->RunRound(100).ok());
  for (int broker = 1; broker <= 3; ++broker)
    rd_kafka_mock_broker_set_down(run.cluster.mock(), broker);
  (void)d->RunRound(3000);
  ProduceTotals t = d->Collect();
  EXPECT_EQ(t.delivered + t.failed, t.produced);
  EXPECT_GT(t.failed, 0);
  std::string error = t.AccountingError();
  EXPECT_NE(error.find(std::to_string(t.undelivered()) + " of 3100 records undelivered"),
            std::string::npos)
      << error;
}

// End offsets with every broker down: an error within the query's timeout plus the grace
// period, never a hang (librdkafka 2.0.2's watermark query alone can retry for minutes).
TEST(AdminClientMock, EndOffsetsWithEveryBrokerDownReturnInBoundedTime) {
  MockRun run({1, 1});
  std::string error;
  auto admin = AdminClient::Create(run.cluster.BaseSettings(), &error);
  ASSERT_TRUE(admin) << error;
  std::int64_t sum = -1;
  ASSERT_TRUE(admin->EndOffsetSum(run.cluster.topic(), 1, std::chrono::seconds(5), &sum).ok());
  EXPECT_EQ(sum, 0);
  for (int broker = 1; broker <= 3; ++broker)
    rd_kafka_mock_broker_set_down(run.cluster.mock(), broker);
  const auto start = std::chrono::steady_clock::now();
  Status s = admin->EndOffsetSum(run.cluster.topic(), 1, std::chrono::seconds(1), &sum);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("end offset"), std::string::npos) << s.message();
  EXPECT_LT(took, std::chrono::seconds(10)) << s.message();
  std::printf("every broker down: \"%s\" after %.1f s\n", s.message().c_str(),
              std::chrono::duration<double>(took).count());
}

TEST(ConsumerDriverMock, ReadsBackExactlyWhatWasProduced) {
  MockRun run;
  auto d = MakeDriver(run, run.Options(1, 1));
  ASSERT_TRUE(d);
  ASSERT_TRUE(d->RunRound(3000).ok());
  std::string error;
  auto c = ConsumerDriver::Create(run.cluster.BaseSettings(), run.cluster.topic(), 2, &error);
  ASSERT_TRUE(c) << error;
  for (int pass = 0; pass < 2; ++pass) {  // re-reading starts again at offset 0
    ConsumeResult r;
    Status s = c->ReadAll(3000, std::chrono::seconds(10), &r);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(r.records, 3000);
    EXPECT_EQ(r.value_bytes, 300000);
  }
  ConsumeResult r;
  Status s = c->ReadAll(3001, std::chrono::milliseconds(1500), &r);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("read 3000 of 3001"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace kbench
