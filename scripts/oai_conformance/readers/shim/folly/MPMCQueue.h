// Declaration-only stand-in for folly (not packaged by Debian): the UPF's config reader includes
// udp.hpp, which names this queue in members the reader never uses.
#pragma once
namespace folly {
template <typename T>
class MPMCQueue;
}
