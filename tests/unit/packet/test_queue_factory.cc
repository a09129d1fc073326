// SPDX-License-Identifier: GPL-3.0-or-later
// The queue disciplines' parameters and factory.
#include "expect.hh"
#include "packet/queue_factory.hh"
#include "queue_test_harness.hh"
#include "util/exception.hh"

TEST(QueueDiscipline, queue_arguments_are_checked) {
  EXPECT_THROW_WITH(UsageError, queue("droptail"), "droptail needs a queue limit");
  EXPECT_THROW_WITH(UsageError, queue("codel", "packets=10,target=0"),
                    "codel: target must be more than 0 ms (in --uplink-queue-args; leave it out for the default, 5)");
  EXPECT_THROW_WITH(UsageError, queue("pie", "max_burst=0"), "pie: max_burst must be more than 0 ms");
  // Times up to an hour (fuzz-queue: interval=1e100 overflowed codel's control law).
  EXPECT_THROW_WITH(UsageError, queue("codel", "interval=1e100"),
                    "codel: interval must be at most 3600000 (an hour; in --uplink-queue-args)");
  EXPECT_THROW_WITH(UsageError, queue("fq_codel", "target=3600001"), "fq_codel: target must be at most 3600000");
  EXPECT_THROW_WITH(UsageError, queue("pie", "qdelay_ref=1e20"), "pie: qdelay_ref must be at most 3600000");
  EXPECT_EQ(queue("codel", "interval=3600000")->description(),
            "codel [packets=1000, target=5, interval=3600000, ecn=1]");
  EXPECT_THROW_WITH(UsageError, queue("droptail", "packets=ten"), "packets must be a non-negative number");
  EXPECT_THROW_WITH(UsageError, queue("droptail", "pakets=10"), "unknown parameter \"pakets\"");
  EXPECT_THROW_WITH(UsageError, queue("droptail", "packets=10,target=5"), "queue droptail takes no parameter target");
  EXPECT_THROW_WITH(UsageError, queue("red"), "unknown queue \"red\"");
  // A limit of 0 is refused for every queue: fq_codel, codel and pie took packets=0 as no limit
  // (fuzz-queue), and a number beyond 2^40 would not convert to an integer.
  for (const char* name : {"droptail", "drophead", "codel", "pie", "fq_codel"}) {
    EXPECT_THROW_WITH(UsageError, queue(name, "packets=0"), "packets must be at least 1");
    EXPECT_THROW_WITH(UsageError, queue(name, "bytes=0"), "bytes must be at least 1");
  }
  EXPECT_THROW_WITH(UsageError, queue("droptail", "packets=1e30"), "packets is too large");
  EXPECT_THROW_WITH(UsageError, queue("fq_codel", "flows=1e300"), "flows is too large");
  ASSERT_EQ(queue("codel", "bytes=30000, target=5, interval=100")->description(),
            "codel [bytes=30000, target=5, interval=100, ecn=1]");
  ASSERT_EQ(queue("fq_codel")->description(), "fq_codel [packets=10240, target=5, interval=100, ecn=1, flows=1024]");
}

// CoDel and PIE with their RFCs' parameters (RFC 8289: target 5 ms, interval 100 ms; RFC 8033:
// QDELAY_REF 15 ms, MAX_BURST 150 ms) and Linux's limit of 1000 packets when left out, as
// fq_codel has Linux's defaults.
TEST(QueueDiscipline, codel_and_pie_have_rfc_defaults) {
  ASSERT_EQ(queue("codel")->description(), "codel [packets=1000, target=5, interval=100, ecn=1]");
  ASSERT_EQ(queue("codel", "target=10")->description(), "codel [packets=1000, target=10, interval=100, ecn=1]");
  ASSERT_EQ(queue("codel", "bytes=30000")->description(), "codel [bytes=30000, target=5, interval=100, ecn=1]");
  ASSERT_EQ(queue("pie")->description(), "pie [packets=1000, qdelay_ref=15, max_burst=150, ecn=1]");
  ASSERT_EQ(queue("pie", "packets=50,max_burst=20")->description(),
            "pie [packets=50, qdelay_ref=15, max_burst=20, ecn=1]");
}

// Parameters without a queue (the default, infinite, takes none): the message names the
// option and the queue that takes them.
TEST(QueueDiscipline, arguments_for_the_infinite_queue_suggest_a_queue) {
  EXPECT_THROW_WITH(
      UsageError,
      make_queue_discipline("infinite", QueueArgs::parse("packets=100", "--uplink-queue"), "--uplink-queue", 0),
      "--uplink-queue-args is given but the queue is infinite (--uplink-queue=infinite, the default), "
      "which takes no parameters: choose a queue, e.g. --uplink-queue=droptail");
  auto suggestion = [](std::string_view args) {
    try {
      make_queue_discipline("infinite", QueueArgs::parse(args, "--downlink-queue"), "--downlink-queue", 0);
    } catch (const UsageError& e) {
      const std::string message = e.what();
      return message.substr(message.rfind('=') + 1);
    }
    return std::string("accepted");
  };
  ASSERT_EQ(suggestion("bytes=3000"), "droptail");
  ASSERT_EQ(suggestion("target=5"), "codel");
  ASSERT_EQ(suggestion("qdelay_ref=20,packets=10"), "pie");
  ASSERT_EQ(suggestion("flows=16"), "fq_codel");
  ASSERT_EQ(suggestion(""), "accepted");
}

TEST(QueueDiscipline, arguments_parse_in_any_order_with_spaces) {
  const QueueArgs args = QueueArgs::parse(" interval=100 , packets=500,target=2.5,,", "--downlink-queue");
  ASSERT_EQ(*args.packets, 500u);
  ASSERT_EQ(*args.target, 2.5);
  ASSERT_EQ(*args.interval, 100.0);
  ASSERT_TRUE(!args.bytes && !args.qdelay_ref && !args.max_burst && !args.flows);
  ASSERT_TRUE(QueueArgs::parse("", "--uplink-queue").empty());
  EXPECT_THROW_WITH(UsageError, QueueArgs::parse("packets", "--uplink-queue"),
                    "--uplink-queue-args: \"packets\" is not NAME=NUMBER");
  EXPECT_THROW_WITH(UsageError, QueueArgs::parse("packets=1.5", "--uplink-queue"), "packets must be a whole number");
  EXPECT_THROW_WITH(UsageError, QueueArgs::parse("target=-1", "--uplink-queue"), "target must be a non-negative");
}

TEST(QueueDiscipline, infinite_admits_everything) {
  auto infinite = queue("infinite");
  ASSERT_EQ(infinite->description(), "infinite");
  ASSERT_TRUE(!infinite->drops_when_dequeuing());
  QueueEvents events;
  for (int i = 0; i < 10000; i++) {
    infinite->reserve();
    infinite->enqueue(i, 1500, events);
  }
  ASSERT_EQ(events.dropped.packets, 0u);
  ASSERT_TRUE(infinite->next(10000, events));
  ASSERT_EQ(infinite->front().arrival, 0);
}

TEST(QueueDiscipline, descriptions_name_the_parameters) {
  ASSERT_EQ(queue("droptail", "packets=100,bytes=30000")->description(), "droptail [bytes=30000, packets=100]");
  ASSERT_EQ(queue("drophead", "bytes=3000")->description(), "drophead [bytes=3000]");
  ASSERT_EQ(queue("pie", "packets=5,qdelay_ref=15,max_burst=150")->description(),
            "pie [packets=5, qdelay_ref=15, max_burst=150, ecn=1]");
  EXPECT_THROW_WITH(UsageError, queue("fq_codel", "flows=0"), "flows must be between 1 and 65536");
}

// ECN marking is on by default in codel, pie and fq_codel; ecn=0 turns it off; ce_threshold
// (codel, fq_codel) needs marking.
TEST(QueueDiscipline, ecn_parameters) {
  ASSERT_EQ(queue("codel", "ecn=0")->description(), "codel [packets=1000, target=5, interval=100, ecn=0]");
  ASSERT_EQ(queue("pie", "ecn=0")->description(), "pie [packets=1000, qdelay_ref=15, max_burst=150, ecn=0]");
  ASSERT_EQ(queue("fq_codel", "ce_threshold=1.5,flows=8")->description(),
            "fq_codel [packets=10240, target=5, interval=100, ecn=1, ce_threshold=1.5, flows=8]");
  EXPECT_THROW_WITH(UsageError, queue("codel", "ecn=2"), "ecn must be 1 (mark ECN-capable packets CE");
  EXPECT_THROW_WITH(UsageError, queue("fq_codel", "ecn=0,ce_threshold=1"), "leave one of them out");
  EXPECT_THROW_WITH(UsageError, queue("codel", "ce_threshold=0"), "ce_threshold must be more than 0 ms");
  EXPECT_THROW_WITH(UsageError, queue("pie", "ce_threshold=1"), "queue pie takes no parameter ce_threshold");
  EXPECT_THROW_WITH(UsageError, queue("droptail", "packets=5,ecn=1"), "queue droptail takes no parameter ecn");
  EXPECT_THROW_WITH(UsageError,
                    make_queue_discipline("infinite", QueueArgs::parse("ecn=1", "--uplink-queue"), "--uplink-queue", 0),
                    "e.g. --uplink-queue=codel");
}
