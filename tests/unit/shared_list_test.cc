// SharedList and SharedListPool (model/shared_list.h): lists that pods carrying the same one hold
// once, and writes that never reach another holder.
#include "model/shared_list.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/cluster.h"

namespace gantry {
namespace {

using Strings = SharedList<std::string>;
using StringPool = SharedListPool<std::string, std::hash<std::string>>;

TEST(SharedListTest, ReadsAsTheVectorItWasMadeFrom) {
  const Strings none;
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.size(), 0u);
  EXPECT_EQ(none.begin(), none.end());
  EXPECT_EQ(none, std::vector<std::string>{});

  const Strings list = std::vector<std::string>{"a", "b", "c"};
  EXPECT_EQ(list.size(), 3u);
  EXPECT_EQ(list[1], "b");
  EXPECT_EQ(list.front(), "a");
  EXPECT_EQ(list.back(), "c");
  std::string joined;
  for (const std::string& s : list) joined += s;
  EXPECT_EQ(joined, "abc");
  EXPECT_EQ(list, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_FALSE(list == (std::vector<std::string>{"a", "b"}));
  // An empty vector holds no list at all.
  EXPECT_TRUE(Strings(std::vector<std::string>{}).SharesWith(none));
}

TEST(SharedListTest, AWriteNeverReachesAnotherHolder) {
  Strings a = {"x", "y"};
  Strings b = a;  // a copy shares the list
  EXPECT_TRUE(a.SharesWith(b));

  b.push_back("z");
  EXPECT_FALSE(a.SharesWith(b));
  EXPECT_EQ(a, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(b, (std::vector<std::string>{"x", "y", "z"}));

  Strings c = a;
  c.clear();
  EXPECT_TRUE(c.empty());
  EXPECT_EQ(a.size(), 2u);

  Strings d = a;
  d = std::vector<std::string>{"w"};
  EXPECT_EQ(a, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(d, (std::vector<std::string>{"w"}));
}

TEST(SharedListTest, EqualListsAreEqualWhetherSharedOrNot) {
  const Strings a = {"x", "y"};
  const Strings b = {"x", "y"};
  EXPECT_FALSE(a.SharesWith(b));
  EXPECT_EQ(a, b);
  EXPECT_FALSE(a == Strings({"y", "x"}));
}

TEST(SharedOptionalTest, ReadsAsTheOptionalItWasMadeFrom) {
  const SharedOptional<std::string> none;
  EXPECT_FALSE(none.has_value());
  EXPECT_FALSE(none);
  EXPECT_EQ(none.ToOptional(), std::nullopt);
  const SharedOptional<std::string> some = std::optional<std::string>("rack");
  ASSERT_TRUE(some.has_value());
  EXPECT_EQ(*some, "rack");
  EXPECT_EQ(some->size(), 4u);
  EXPECT_EQ(some.ToOptional(), std::optional<std::string>("rack"));
  EXPECT_EQ(some, SharedOptional<std::string>(std::optional<std::string>("rack")));
  EXPECT_FALSE(some == none);
  EXPECT_FALSE(some == SharedOptional<std::string>(std::optional<std::string>("zone")));
  EXPECT_EQ(sizeof(SharedOptional<std::string>), sizeof(void*));
}

TEST(SharedListPoolTest, EqualListsBecomeOne) {
  StringPool pool;
  const Strings a = pool.Intern(Strings{"kube-root-ca.crt"});
  const Strings b = pool.Intern(Strings{"kube-root-ca.crt"});
  const Strings c = pool.Intern(Strings{"settings"});
  const Strings d = pool.Intern(Strings{"kube-root-ca.crt", "settings"});
  EXPECT_TRUE(a.SharesWith(b));
  EXPECT_FALSE(a.SharesWith(c));
  EXPECT_FALSE(a.SharesWith(d));
  EXPECT_EQ(b, (std::vector<std::string>{"kube-root-ca.crt"}));
  EXPECT_EQ(pool.size(), 3u);
  // Empty lists are not pooled.
  EXPECT_TRUE(pool.Intern(Strings{}).empty());
  EXPECT_EQ(pool.size(), 3u);
}

TEST(SharedListPoolTest, TolerationsDifferingInAnyFieldStayApart) {
  SharedListPool<Toleration, TolerationHash> pool;
  const Toleration base{"node.kubernetes.io/not-ready", "Exists", "", "NoExecute"};
  std::vector<SharedList<Toleration>> held;
  held.push_back(pool.Intern(SharedList<Toleration>{base}));
  for (int field = 0; field < 4; ++field) {
    Toleration t = base;
    std::string& s = field == 0 ? t.key : field == 1 ? t.op : field == 2 ? t.value : t.effect;
    s += "!";
    held.push_back(pool.Intern(SharedList<Toleration>{t}));
  }
  EXPECT_EQ(pool.size(), 5u);
  for (size_t i = 1; i < held.size(); ++i) EXPECT_FALSE(held[0].SharesWith(held[i])) << i;
  EXPECT_TRUE(pool.Intern(SharedList<Toleration>{base}).SharesWith(held[0]));
}

TEST(SharedListPoolTest, ListsNoLongerHeldAreDroppedAsThePoolGrows) {
  StringPool pool;
  const Strings kept = pool.Intern(Strings{"kept"});
  for (int i = 0; i < 1000; ++i) pool.Intern(Strings{"gone-" + std::to_string(i)});
  // Only the lists in use survive the sweeps (plus what came after the last one).
  EXPECT_LT(pool.size(), 200u);
  const Strings again = pool.Intern(Strings{"kept"});
  EXPECT_TRUE(again.SharesWith(kept));
  EXPECT_EQ(again, (std::vector<std::string>{"kept"}));
}

}  // namespace
}  // namespace gantry
