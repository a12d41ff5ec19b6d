#include "server/stop_sequences.h"

#include <gtest/gtest.h>

namespace strata::server {
namespace {

// The text `pieces` send through a StopSequences, piece by piece, and whether it stopped.
std::pair<std::string, bool> sent(std::vector<std::string> stops,
                                  const std::vector<std::string>& pieces) {
  StopSequences s(std::move(stops));
  std::string out;
  for (const std::string& piece : pieces) out += s.push(piece);
  out += s.finish();
  return {out, s.stopped()};
}

TEST(StopSequences, PassesEverythingWithoutStops) {
  EXPECT_EQ(sent({}, {"Hel", "lo", " world"}), std::make_pair(std::string("Hello world"), false));
}

TEST(StopSequences, CutsBeforeAStopSpreadOverPieces) {
  EXPECT_EQ(sent({"\n\nUser:"}, {"Sure.", "\n", "\nUs", "er: hi", " more"}),
            std::make_pair(std::string("Sure."), true));
}

TEST(StopSequences, HoldsBackOnlyWhatCouldStillStartAStop) {
  StopSequences s({"END"});
  EXPECT_EQ(s.push("abcE"), "abc");
  EXPECT_EQ(s.push("N"), "");
  EXPECT_EQ(s.push("x"), "ENx");  // not a stop after all
  EXPECT_FALSE(s.stopped());
}

TEST(StopSequences, TheEarliestOfSeveralStopsWins) {
  EXPECT_EQ(sent({"b", "a"}, {"xxab"}), std::make_pair(std::string("xx"), true));
}

TEST(StopSequences, NothingAfterTheStop) {
  StopSequences s({"."});
  EXPECT_EQ(s.push("one. two"), "one");
  EXPECT_EQ(s.push("three"), "");
  EXPECT_EQ(s.finish(), "");
}

TEST(StopSequences, HeldTextComesOutWhenTheReplyEnds) {
  EXPECT_EQ(sent({"<|end|>"}, {"done <|e"}), std::make_pair(std::string("done <|e"), false));
}

}  // namespace
}  // namespace strata::server
