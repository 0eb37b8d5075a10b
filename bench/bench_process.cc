#include "bench_process.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <thread>

namespace pcp::bench {

void Die(const std::string& what) {
  std::fprintf(stderr, "%s\n", what.c_str());
  std::exit(1);
}

double SelfCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

Child Spawn(const std::function<void(const std::function<void(int)>&)>& serve) {
  int port_pipe[2], ask[2], answer[2];
  if (pipe(port_pipe) != 0 || pipe(ask) != 0 || pipe(answer) != 0) Die("pipe failed");
  const pid_t parent = getpid();
  Child child;
  child.pid = fork();
  if (child.pid < 0) Die("fork failed");
  if (child.pid == 0) {
    close(port_pipe[0]);
    close(ask[1]);
    close(answer[0]);
    // The child never outlives this process (a Die here ends it with a plain exit()).
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    // Answers each byte on `ask` with this process's CPU seconds; its own CPU is a few µs a
    // question.
    std::thread([ask_fd = ask[0], answer_fd = answer[1]] {
      char c;
      while (read(ask_fd, &c, 1) == 1) {
        const double s = SelfCpuSeconds();
        if (write(answer_fd, &s, sizeof(s)) != sizeof(s)) _exit(1);
      }
    }).detach();
    serve([&](int port) {
      if (write(port_pipe[1], &port, sizeof(port)) != sizeof(port)) _exit(1);
      close(port_pipe[1]);
    });
    _exit(0);
  }
  close(port_pipe[1]);
  close(ask[0]);
  close(answer[1]);
  child.ask_fd = ask[1];
  child.answer_fd = answer[0];
  if (read(port_pipe[0], &child.port, sizeof(child.port)) != sizeof(child.port)) {
    Die("a server process failed to start");
  }
  close(port_pipe[0]);
  return child;
}

double ChildCpuSeconds(const Child& child) {
  const char c = 1;
  double s = 0;
  if (write(child.ask_fd, &c, 1) != 1 || read(child.answer_fd, &s, sizeof(s)) != sizeof(s)) {
    Die("a server process stopped answering (did it crash?)");
  }
  return s;
}

void Stop(const Child& child) {
  if (child.pid <= 0) return;
  kill(child.pid, SIGKILL);
  waitpid(child.pid, nullptr, 0);
  close(child.ask_fd);
  close(child.answer_fd);
}

StealClock StealClock::Now() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  StealClock c;
  in >> cpu;
  for (int i = 0; i < 8; ++i) {  // user nice system idle iowait irq softirq steal
    double v = 0;
    in >> v;
    c.total += v;
    if (i == 7) c.steal = v;
  }
  return c;
}

double StealClock::FractionSince(const StealClock& start) const {
  return (steal - start.steal) / std::max(1.0, total - start.total);
}

}  // namespace pcp::bench
