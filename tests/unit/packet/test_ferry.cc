// SPDX-License-Identifier: GPL-3.0-or-later
// The ferry with offloads, end to end but without devices (and a link's ferry running late): datagram socket pairs
// stand in for the two TUN devices (each message a virtio-net header and a packet, as a TUN device opened with
// IFF_VNET_HDR reads and writes), and the ferry's thread runs the real queues.
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "expect.hh"
#include "packet/ferry.hh"
#include "packet/link_queue.hh"
#include "packet/offload.hh"
#include "packet/queue_factory.hh"
#include "packet/queues.hh"
#include "packet/trace.hh"
#include "tcp_packets.hh"
#include "util/byte_order.hh"
#include "util/exception.hh"
#include "util/file_descriptor.hh"

namespace {

// `segments` full segments of payload, as one super-packet (ACK, PSH; IP ID 100, sequence 1).
std::vector<uint8_t> super_packet(uint32_t segments) { return tcp_packet(segments * kMss, 1, kAck | kPsh, 100); }

// Runs a Ferry over `queue` between two socket pairs; send() is what the kernel hands the
// ferry, received() what the ferry wrote, once `count` messages have come out (or 5 s passed).
template <class Queue>
class FerryRig {
 public:
  explicit FerryRig(Queue& queue) {
    int in[2], out[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0, in), 0);
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0, out), 0);
    kernel_in_ = FileDescriptor(in[0]);
    ferry_in_ = FileDescriptor(in[1]);
    ferry_out_ = FileDescriptor(out[0]);
    kernel_out_ = FileDescriptor(out[1]);
    for (int fd : {kernel_in_.get(), ferry_out_.get()}) {
      int size = 4 << 20;
      ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
    }
    stop_ = FileDescriptor(::eventfd(0, EFD_NONBLOCK));
    thread_ = std::thread(
        [this, &queue] { Ferry<Queue>(ferry_in_.get(), ferry_out_.get(), queue, stop_.get(), true).run(); });
  }
  ~FerryRig() {
    const uint64_t one = 1;
    (void)!::write(stop_.get(), &one, sizeof one);
    thread_.join();
  }
  void send(const VnetHeader& header, const std::vector<uint8_t>& packet) {
    std::vector<uint8_t> message(sizeof header + packet.size());
    std::memcpy(message.data(), &header, sizeof header);
    std::memcpy(message.data() + sizeof header, packet.data(), packet.size());
    ASSERT_EQ(::send(kernel_in_.get(), message.data(), message.size(), 0), static_cast<ssize_t>(message.size()));
  }
  std::vector<TunMessage> received(size_t count) {
    std::vector<TunMessage> out;
    std::vector<uint8_t> buffer(70000);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (out.size() < count && std::chrono::steady_clock::now() < deadline) {
      const ssize_t n = ::recv(kernel_out_.get(), buffer.data(), buffer.size(), 0);
      if (n < 0) {
        std::this_thread::yield();
        continue;
      }
      TunMessage m;
      std::memcpy(&m.header, buffer.data(), sizeof m.header);
      m.packet.assign(buffer.begin() + sizeof m.header, buffer.begin() + n);
      out.push_back(m);
    }
    return out;
  }

 private:
  FileDescriptor kernel_in_, ferry_in_, ferry_out_, kernel_out_, stop_;
  std::thread thread_;
};

const VnetHeader kTso{vnet::kNeedsChecksum, vnet::kGsoTcp4, 52, kMss, 20, 16};

// Drops the wire packets whose numbers (from 1) are listed.
struct DropListed {
  std::vector<int> listed;
  int seen = 0;
  bool admit(Nanos) {
    seen++;
    for (int n : listed)
      if (n == seen) return false;
    return true;
  }
};

}  // namespace

TEST(FerryOffload, delay_queue_carries_a_super_packet_whole) {
  DelayQueue queue(0);
  FerryRig rig(queue);
  const auto packet = super_packet(30);
  rig.send(kTso, packet);
  const auto out = rig.received(1);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].packet, packet);
  EXPECT_EQ(out[0].header.gso_type, vnet::kGsoTcp4);
  EXPECT_EQ(out[0].header.gso_size, kMss);
  EXPECT_EQ(out[0].header.hdr_len, 52);
  EXPECT_EQ(out[0].header.flags, vnet::kNeedsChecksum);
}

TEST(FerryOffload, a_gate_passing_everything_gives_back_the_same_super_packet) {
  GateQueue queue{OpenGate{}};
  FerryRig rig(queue);
  const auto packet = super_packet(30);
  rig.send(kTso, packet);
  const auto out = rig.received(1);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].packet, packet);  // cut into 30 wire packets, merged back byte for byte
}

TEST(FerryOffload, a_gate_decides_per_wire_packet_and_the_rest_is_merged_around_the_hole) {
  GateQueue queue{DropListed{{3, 10}}};
  FerryRig rig(queue);
  const auto packet = super_packet(12);
  rig.send(kTso, packet);
  const auto out = rig.received(3);
  ASSERT_EQ(out.size(), 3u);
  // Segments 1-2, 4-9 and 11-12 (of 12): three super-packets, their payloads where they were.
  const uint32_t first[3] = {0, 3, 10}, count[3] = {2, 6, 2};
  for (int i = 0; i < 3; i++) {
    const auto& m = out[i];
    EXPECT_EQ(m.header.gso_type, vnet::kGsoTcp4) << i;
    ASSERT_EQ(m.packet.size(), 52 + count[i] * kMss) << i;
    EXPECT_EQ(load_be32(&m.packet[24]), 1 + first[i] * kMss) << i;
    EXPECT_EQ(load_be16(&m.packet[4]), 100 + first[i]) << i;  // the IP ID its first segment had
    EXPECT_EQ((m.packet[33] & kPsh) != 0, i == 2) << i;       // PSH only where the original ended
    EXPECT_EQ(std::memcmp(&m.packet[52], &packet[52 + first[i] * kMss], count[i] * kMss), 0) << i;
    std::vector<uint8_t> done = m.packet;
    complete_checksum(done, 20, 16);
    EXPECT_TRUE(checksums_valid(done)) << i;
  }
}

TEST(FerryOffload, plain_packets_keep_their_header) {
  GateQueue queue{OpenGate{}};
  FerryRig rig(queue);
  std::vector<uint8_t> ping(84, 0);
  ping[0] = 0x45;
  ping[9] = 1;
  store_be16(&ping[2], 84);
  rig.send(VnetHeader{vnet::kDataValid, 0, 0, 0, 0, 0}, ping);
  const auto out = rig.received(1);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].packet, ping);
  EXPECT_EQ(out[0].header.flags, vnet::kDataValid);
  EXPECT_EQ(out[0].header.gso_type, vnet::kGsoNone);
}

namespace {
// A process's state: 'S' asleep (a ferry only sleeps in epoll_wait), 'T' stopped.
char process_state(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() ? stat[paren + 2] : '?';
}
template <class Condition>
bool wait_for(Condition condition) {  // 5 s at most
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}
}  // namespace

namespace {
// One run of the scenario below: how many packets left within 0.5 ms of the big one, or nothing
// if the machine was too slow to stop the ferry before the big one's departure.
std::optional<size_t> late_ferry_run() {
  int in[2], out[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0, in) < 0) throw SystemError("socketpair");
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0, out) < 0) throw SystemError("socketpair");
  FileDescriptor kernel_in(in[0]), ferry_in(in[1]), ferry_out(out[0]), kernel_out(out[1]);
  FileDescriptor stop(::eventfd(0, EFD_NONBLOCK));
  const pid_t child = ::fork();
  if (child < 0) throw SystemError("fork");
  if (child == 0) {  // the ferry: rate:120kbit/s, a 1500-byte packet in 100 ms, 40 bytes in 2.67
    const Trace trace = Trace::from_argument("rate:120kbit/s");
    LinkQueue link(trace, monotonic_now(), false,
                   make_queue_discipline("infinite", QueueArgs::parse("", "--uplink-queue"), "--uplink-queue", 1),
                   nullptr);
    Ferry<LinkQueue>(ferry_in.get(), ferry_out.get(), link, stop.get(), false).run();
    ::_exit(0);
  }
  std::vector<uint8_t> big(1500, 0), small(40, 0), buffer(2000);
  big[0] = small[0] = 0x45;
  // A big packet on the link, read by the ferry, which then waits 100 ms for it to leave.
  const Nanos start = monotonic_now();
  (void)!::send(kernel_in.get(), big.data(), big.size(), 0);
  wait_for([&] {
    int queued = 0;
    return ::ioctl(ferry_in.get(), FIONREAD, &queued) == 0 && queued == 0 && process_state(child) == 'S';
  });
  // Kept off the CPU past that departure (to 112 ms), while 20 small packets come.
  ::kill(child, SIGSTOP);
  wait_for([&] { return process_state(child) == 'T'; });
  const bool stopped_in_time =
      monotonic_now() - start < 90 * kNanosPerMs && ::recv(kernel_out.get(), buffer.data(), buffer.size(), 0) < 0;
  for (int i = 0; i < 20; i++) (void)!::send(kernel_in.get(), small.data(), small.size(), 0);
  wait_for([&] { return monotonic_now() - start >= 112 * kNanosPerMs; });
  ::kill(child, SIGCONT);
  std::vector<Nanos> received;
  wait_for([&] {
    while (::recv(kernel_out.get(), buffer.data(), buffer.size(), 0) > 0) received.push_back(monotonic_now());
    return received.size() == 21;
  });
  const uint64_t one = 1;
  (void)!::write(stop.get(), &one, sizeof one);
  ::waitpid(child, nullptr, 0);
  if (!stopped_in_time) return std::nullopt;
  EXPECT_EQ(received.size(), 21u);
  size_t together = 0;
  for (Nanos t : received) together += t - received[0] < kNanosPerMs / 2;
  return together;
}
}  // namespace

// A ferry kept off the CPU (here stopped) while its link had packets to send: the packets that
// waited for it meanwhile use the opportunities its lateness let pass, and leave together when it
// runs again, rather than one opportunity after another from then on.
// The small ones had the link from 100 ms on (at most 20 ms before the ferry ran again): those
// whose 2.67 ms had passed leave with the big one, the rest 2.67 ms apart. Read late by the
// ferry's own clock, they would have had the link only from then on, the first 2.67 ms later.
TEST(FerryLink, a_late_ferry_loses_no_opportunities) {
  std::optional<size_t> together;
  for (int attempt = 0; attempt < 3 && !together; attempt++) together = late_ferry_run();
  ASSERT_TRUE(together.has_value()) << "the ferry could not be stopped before its departure in 3 attempts";
  EXPECT_GE(*together, 4u) << "packets leaving within 0.5 ms of the big one";
}

// A departure within the batch window of the last packets sent waits for the window's end (the
// packets due by then leave together); one after a pause, or the first, leaves at its time.
TEST(DepartureBatch, a_dense_backlog_leaves_in_batches_and_a_lone_packet_on_time) {
  DepartureBatch batch;
  const Nanos t = 5 * kNanosPerMs, window = DepartureBatch::kWindow;
  EXPECT_EQ(batch.release_at(t), t);  // nothing sent yet
  EXPECT_EQ(batch.release_at(kNever), kNever);
  batch.sent(t);
  EXPECT_EQ(batch.release_at(t + 1'200), t + window);  // the next packet of a 10 Gbit/s backlog
  EXPECT_EQ(batch.release_at(t + window - 1), t + window);
  EXPECT_EQ(batch.release_at(t + window), t + window);            // a window after: on time
  EXPECT_EQ(batch.release_at(t + kNanosPerMs), t + kNanosPerMs);  // after a pause: on time
  EXPECT_EQ(batch.release_at(kNever), kNever);                    // nothing queued: no wake-up
}
