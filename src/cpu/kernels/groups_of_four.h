// The kernels keep a compile-time number of columns (or rows) in registers; a call over any
// number of them runs groups of four, then the remainder as one group.
#pragma once

#include <type_traits>

namespace strata {

// Calls run(std::integral_constant<int, size>{}, first) for each group, in order.
template <class Run>
inline void in_groups_of_four(int n, Run&& run) {
  int first = 0;
  for (; first + 4 <= n; first += 4) run(std::integral_constant<int, 4>{}, first);
  switch (n - first) {
    case 3:
      run(std::integral_constant<int, 3>{}, first);
      break;
    case 2:
      run(std::integral_constant<int, 2>{}, first);
      break;
    case 1:
      run(std::integral_constant<int, 1>{}, first);
      break;
    default:
      break;
  }
}

}  // namespace strata
