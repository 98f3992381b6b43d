// The refresh policy's choice of slots on hand-made ages and importances.
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "comm/refresh_policy.hpp"

namespace halognn {
namespace {

TEST(RefreshChoice, AgeReachedTheBoundAndTheMostImportantOfTheRest) {
  // s = 3: slots 0 (never sent) and 3, 5 (age >= 3) are forced.
  const std::vector<std::int64_t> age = {-1, 1, 2, 3, 0, 7, 2, 1};
  const std::vector<float> importance = {0, 0.5f, 0.1f, 0, 0.9f, 0, 0.5f, 0.2f};
  std::int64_t forced = 0;
  EXPECT_EQ(choose_refresh(age, importance, 3, 0.0, &forced), (std::vector<std::int32_t>{0, 3, 5}));
  EXPECT_EQ(forced, 3);
  // r = 0.4 of the five others = 2: importance 0.9 (slot 4), then the tie 0.5 goes to slot 1.
  EXPECT_EQ(choose_refresh(age, importance, 3, 0.4, &forced),
            (std::vector<std::int32_t>{0, 1, 3, 4, 5}));
  // r rounds up: 0.3 of five is 1.5 -> 2.
  EXPECT_EQ(choose_refresh(age, importance, 3, 0.3, nullptr), (std::vector<std::int32_t>{0, 1, 3, 4, 5}));
  // r = 1 takes everything; so does s = 1 in a real epoch, where every age is at least 1 (a
  // slot sent in an earlier epoch) or -1 (never sent).
  EXPECT_EQ(choose_refresh(age, importance, 3, 1.0, nullptr).size(), age.size());
  const std::vector<std::int64_t> later = {-1, 1, 2, 3, 1, 7, 2, 1};
  EXPECT_EQ(choose_refresh(later, importance, 1, 0.0, nullptr).size(), later.size());
  // Infinite importance (no gradient yet) comes first.
  std::vector<float> inf = importance;
  inf[7] = std::numeric_limits<float>::infinity();
  EXPECT_EQ(choose_refresh(age, inf, 3, 0.2, nullptr), (std::vector<std::int32_t>{0, 3, 5, 7}));
  EXPECT_TRUE(choose_refresh({}, {}, 2, 0.5, nullptr).empty());
}

}  // namespace
}  // namespace halognn
