// The memory plan of the bundled model (strata-tiny-moe, 8 layers x 64 experts) under budgets
// from 48 MiB to 1 TiB: what it lists stays the same, the arena takes the rest and says what
// share of the experts it holds, and a budget beyond the machine is said to be one.
#include "runtime/memory_plan.h"

#include <gtest/gtest.h>

#include <regex>

#include "backend/host_slot_memory.h"
#include "cpu/cpu_backend.h"
#include "experts/expert_arena.h"
#include "runtime/byte_size.h"

namespace strata {
namespace {

const std::string kModel = std::string(STRATA_SOURCE_DIR) + "/models/strata-tiny-moe-q4_0.gguf";
constexpr uint64_t kMiB = uint64_t(1) << 20;

std::shared_ptr<const Model> described() {
  auto file = gguf::GgufFile::open(kModel);
  EXPECT_TRUE(file.ok()) << file.status().message();
  auto model = Model::describe(file.value());
  EXPECT_TRUE(model.ok()) << model.status().message();
  return model.value();
}

MemoryPlan plan_for(const Model& model, uint64_t budget,
                    const std::optional<AvailableMemory>& available = std::nullopt) {
  MemoryPlanRequest request;
  request.budget_bytes = budget;
  request.n_ctx = 1024;  // the model's trained context, which sessions default to
  request.batch = 256;
  request.cache_policy = "successor";
  const auto backend = make_cpu_backend(model.config(), model.weight_formats(), 2);
  EXPECT_TRUE(backend.ok()) << backend.status().message();
  return plan_memory(model, *backend.value(), request, available);
}

// Every line but the first, which is measured in this process and moves as it allocates.
std::vector<std::pair<std::string, uint64_t>> listed_lines(const MemoryPlan& plan) {
  std::vector<std::pair<std::string, uint64_t>> lines;
  for (size_t i = 1; i < plan.lines.size(); ++i)
    lines.emplace_back(plan.lines[i].what, plan.lines[i].bytes);
  return lines;
}

TEST(MemoryPlan, WhatItListsDoesNotGrowWithTheBudget) {
  const auto model = described();
  const MemoryPlan small = plan_for(*model, 104 * kMiB);
  ASSERT_TRUE(small.shortfall.ok()) << small.shortfall.message();
  const uint64_t small_listed = small.minimum_budget_bytes - small.lines[0].bytes;
  for (const uint64_t budget : {uint64_t(1) << 30, uint64_t(8) << 30, uint64_t(1) << 40}) {
    const MemoryPlan plan = plan_for(*model, budget);
    EXPECT_EQ(listed_lines(plan), listed_lines(small)) << format_bytes(budget);
    EXPECT_EQ(plan.minimum_budget_bytes - plan.lines[0].bytes, small_listed)
        << format_bytes(budget);
  }
}

TEST(MemoryPlan, ArenaLineSaysTheShareOfTheExpertsItHolds) {
  const auto model = described();
  const MemoryPlan plan = plan_for(*model, 48 * kMiB);  // scripts/demo's budget
  ASSERT_GT(plan.arena_slots, 0);
  EXPECT_EQ(plan.expert_units, 8 * 64);
  EXPECT_LT(plan.arena_slots, plan.expert_units);
  const std::regex arena_line(
      "\n  expert arena +[0-9.]+ MiB  \\(([0-9]+) % of the experts: ([0-9]+) of 512 units\\)\n");
  std::smatch match;
  const std::string text = plan.to_text();
  ASSERT_TRUE(std::regex_search(text, match, arena_line)) << text;
  EXPECT_EQ(std::stoll(match[2]), plan.arena_slots);
  EXPECT_EQ(std::stoll(match[1]), std::llround(100.0 * plan.arena_slots / 512));
  // The arena the session makes from what the plan leaves it is the one the line describes.
  const auto arena = ExpertArena::create(model->weights().experts, plan.arena_bytes, 4096,
                                         int(model->config().n_expert_used), make_host_slot_memory);
  ASSERT_TRUE(arena.ok()) << arena.status().message();
  EXPECT_EQ(arena.value()->total_slots(), plan.arena_slots);
  EXPECT_EQ(arena.value()->bytes(), plan.arena_slot_bytes);
  EXPECT_LE(plan.arena_slot_bytes, plan.arena_bytes);
}

TEST(MemoryPlan, BudgetBeyondEveryExpertLeavesTheRestUnused) {
  const auto model = described();
  const MemoryPlan plan = plan_for(*model, uint64_t(1) << 40);
  EXPECT_EQ(plan.arena_slots, plan.expert_units);
  const std::string text = plan.to_text();
  EXPECT_NE(text.find("(100 % of the experts: 512 of 512 units)"), std::string::npos) << text;
  EXPECT_NE(text.find("left unused (every expert already has a slot)"), std::string::npos) << text;
}

TEST(MemoryPlan, SaysWhenTheBudgetIsMoreThanTheMachineHas) {
  const auto model = described();
  const AvailableMemory available{uint64_t(1) << 30, "available on this machine"};
  const std::string over = plan_for(*model, uint64_t(8) << 30, available).to_text();
  EXPECT_NE(over.find("note: the budget is more than the 1.00 GiB available on this machine"),
            std::string::npos)
      << over;
  EXPECT_EQ(plan_for(*model, 104 * kMiB, available).to_text().find("note:"), std::string::npos);
}

TEST(MemoryPlan, RefusesABudgetBelowTheSmallestThatWorks) {
  const auto model = described();
  const MemoryPlan plan = plan_for(*model, 8 * kMiB);
  ASSERT_FALSE(plan.shortfall.ok());
  EXPECT_NE(plan.shortfall.message().find("the memory budget 8.00 MiB is"), std::string::npos)
      << plan.shortfall.message();
  EXPECT_EQ(plan.arena_slots, 0);
  EXPECT_EQ(plan.to_text().find("expert arena"), std::string::npos);
}

}  // namespace
}  // namespace strata
