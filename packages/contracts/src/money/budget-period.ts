/**
 * A budget's period, as LiteLLM's `budget_duration` and Bifrost's reset period mean it: spend
 * counts from the start of the current calendar day, week (Monday) or month, in UTC, and starts
 * again at the next; `none` never resets.
 */
import { z } from 'zod';

export const budgetPeriods = ['none', 'daily', 'weekly', 'monthly'] as const;
export type BudgetPeriod = (typeof budgetPeriods)[number];
export const budgetPeriod = z.enum(budgetPeriods);

const DAY_MS = 86_400_000;

/** When the period holding `now` began, in epoch seconds (0 for `none`: one period since ever). */
export function periodStart(period: BudgetPeriod, now = Date.now()): number {
  const date = new Date(now);
  const day = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate());
  switch (period) {
    case 'none': return 0;
    case 'daily': return day / 1000;
    // getUTCDay: 0 is Sunday; a week starts on Monday (ISO 8601).
    case 'weekly': return (day - ((date.getUTCDay() + 6) % 7) * DAY_MS) / 1000;
    case 'monthly': return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1) / 1000;
  }
}

/** When the period holding `now` ends and the budget starts again, in epoch seconds; undefined for `none`. */
export function periodEnd(period: BudgetPeriod, now = Date.now()): number | undefined {
  const start = periodStart(period, now) * 1000;
  const date = new Date(start);
  switch (period) {
    case 'none': return undefined;
    case 'daily': return (start + DAY_MS) / 1000;
    case 'weekly': return (start + 7 * DAY_MS) / 1000;
    case 'monthly': return Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1) / 1000;
  }
}

/** The start of every period holding `now`, in the order the store's scripts take them. */
export const periodStarts = (now = Date.now()) => budgetPeriods.map((period) => periodStart(period, now));

/**
 * A record's budget as a caller should read it at `now`: its spend in the current period (0 once
 * a new period began, which the store counts afresh at the next charge), and when it resets
 * (epoch s; null for a budget that never does, or no budget).
 */
export function budgetAsOf<T extends { max_budget: number; budget_duration: BudgetPeriod; budget_spend: number; budget_period: number }>(
  record: T, now = Date.now(),
): T & { budget_resets_at: number | null } {
  const period = budgetPeriods.includes(record.budget_duration) ? record.budget_duration : 'none';
  const current = record.budget_period === periodStart(period, now);
  return {
    ...record,
    budget_duration: period,
    budget_spend: current ? record.budget_spend : 0,
    budget_resets_at: record.max_budget > 0 ? periodEnd(period, now) ?? null : null,
  };
}
