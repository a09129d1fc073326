// The queue disciplines' parameters and factory.
#include "expect.hh"
#include "packet/queue_discipline.hh"
#include "queue_test_harness.hh"
#include "util/exception.hh"

TEST(QueueDiscipline, queue_arguments_are_checked) {
  EXPECT_THROW_WITH(UsageError, queue("droptail"), "droptail needs a queue limit");
  EXPECT_THROW_WITH(UsageError, queue("codel", "packets=10"), "codel needs target=MS");
  EXPECT_THROW_WITH(UsageError, queue("codel", "packets=10,target=5"), "codel needs interval=MS");
  EXPECT_THROW_WITH(UsageError, queue("pie", "packets=10,qdelay_ref=5"), "pie needs max_burst=MS");
  EXPECT_THROW_WITH(UsageError, queue("infinite", "packets=10"), "queue infinite takes no parameters");
  EXPECT_THROW_WITH(UsageError, queue("droptail", "packets=ten"), "packets must be a non-negative number");
  EXPECT_THROW_WITH(UsageError, queue("droptail", "pakets=10"), "unknown parameter \"pakets\"");
  EXPECT_THROW_WITH(UsageError, queue("droptail", "packets=10,target=5"), "queue droptail takes no parameter target");
  EXPECT_THROW_WITH(UsageError, queue("red"), "unknown queue \"red\"");
  ASSERT_EQ(queue("codel", "bytes=30000, target=5, interval=100")->description(),
            "codel [bytes=30000, target=5, interval=100]");
  ASSERT_EQ(queue("fq_codel")->description(), "fq_codel [packets=10240, target=5, interval=100, flows=1024]");
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
  DropCount drops;
  for (int i = 0; i < 10000; i++) {
    infinite->reserve();
    infinite->enqueue(i, 1500, drops);
  }
  ASSERT_EQ(drops.packets, 0u);
  ASSERT_TRUE(infinite->next(10000, drops));
  ASSERT_EQ(infinite->front().arrival, 0);
}

TEST(QueueDiscipline, descriptions_name_the_parameters) {
  ASSERT_EQ(queue("droptail", "packets=100,bytes=30000")->description(), "droptail [bytes=30000, packets=100]");
  ASSERT_EQ(queue("drophead", "bytes=3000")->description(), "drophead [bytes=3000]");
  ASSERT_EQ(queue("pie", "packets=5,qdelay_ref=15,max_burst=150")->description(),
            "pie [packets=5, qdelay_ref=15, max_burst=150]");
  EXPECT_THROW_WITH(UsageError, queue("fq_codel", "flows=0"), "flows must be between 1 and 65536");
}
