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
