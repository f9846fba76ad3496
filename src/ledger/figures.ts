import { MICROS, fromMicros, mulDivRound, toMicros } from '../money.js';

/** A review's verdict (docs/figures.md). */
export const VERDICTS = ['accepted', 'corrected', 'rejected'] as const;
export type Verdict = (typeof VERDICTS)[number];

/**
 * An event's figures in micro-units: what it saves and costs, and the review time it took. The
 * event's own row holds the original ones (review time 0); its adjustments add to them.
 */
export interface Figures {
  hoursSavedMicros: number;
  costSavedMicros: number;
  agentCostMicros: number;
  reviewHoursMicros: number;
  reviewCostMicros: number;
}

export const ZERO_FIGURES: Figures = {
  hoursSavedMicros: 0,
  costSavedMicros: 0,
  agentCostMicros: 0,
  reviewHoursMicros: 0,
  reviewCostMicros: 0,
};

/** The figures `b` − `a`, each exactly (the adjustment that takes `a` to `b`). */
export function figuresDelta(a: Figures, b: Figures): Figures {
  return {
    hoursSavedMicros: b.hoursSavedMicros - a.hoursSavedMicros,
    costSavedMicros: b.costSavedMicros - a.costSavedMicros,
    agentCostMicros: b.agentCostMicros - a.agentCostMicros,
    reviewHoursMicros: b.reviewHoursMicros - a.reviewHoursMicros,
    reviewCostMicros: b.reviewCostMicros - a.reviewCostMicros,
  };
}

export function figuresAdd(a: Figures, b: Figures): Figures {
  return {
    hoursSavedMicros: a.hoursSavedMicros + b.hoursSavedMicros,
    costSavedMicros: a.costSavedMicros + b.costSavedMicros,
    agentCostMicros: a.agentCostMicros + b.agentCostMicros,
    reviewHoursMicros: a.reviewHoursMicros + b.reviewHoursMicros,
    reviewCostMicros: a.reviewCostMicros + b.reviewCostMicros,
  };
}

export function isZero(f: Figures): boolean {
  return (
    f.hoursSavedMicros === 0 &&
    f.costSavedMicros === 0 &&
    f.agentCostMicros === 0 &&
    f.reviewHoursMicros === 0 &&
    f.reviewCostMicros === 0
  );
}

/** round(a × b / divisor), half away from zero, for an `a` of either sign (money.ts mulDivRound). */
function signedMulDivRound(a: number, b: number, divisor: number): number {
  const magnitude = mulDivRound(Math.abs(a), b, divisor);
  return a < 0 ? -magnitude : magnitude;
}

export interface ReviewInput {
  verdict: Verdict;
  reviewMinutes: number;
  /** The baseline and hourly rate in force for the event (its own, or a restatement's). */
  baselineMinutes: number;
  hourlyRateMicros: number;
}

/**
 * The figures of a reviewed event (docs/figures.md):
 * - minutes saved = baseline − review minutes (accepted, corrected) or − review minutes
 *   (rejected), in micro-minutes, each term rounded to a micro-minute;
 * - hours_saved = minutes saved / 60, cost_saved = hours_saved × hourly rate;
 * - review_hours = review minutes / 60, review_cost = review_hours × hourly rate;
 * each rounded once to micro-units, half away from zero. Agent cost is not the review's.
 */
export function reviewFigures(input: ReviewInput): Omit<Figures, 'agentCostMicros'> {
  const reviewMicroMinutes = toMicros(input.reviewMinutes);
  const savedMicroMinutes =
    input.verdict === 'rejected' ? -reviewMicroMinutes : toMicros(input.baselineMinutes) - reviewMicroMinutes;
  const hoursSavedMicros = signedMulDivRound(savedMicroMinutes, 1, 60);
  const reviewHoursMicros = signedMulDivRound(reviewMicroMinutes, 1, 60);
  return {
    hoursSavedMicros,
    costSavedMicros: signedMulDivRound(hoursSavedMicros, input.hourlyRateMicros, MICROS),
    reviewHoursMicros,
    reviewCostMicros: signedMulDivRound(reviewHoursMicros, input.hourlyRateMicros, MICROS),
  };
}

/** Figures as the API shows them (net_saved = cost_saved − agent_cost). */
export function figuresView(f: Figures) {
  return {
    hours_saved: fromMicros(f.hoursSavedMicros),
    cost_saved: fromMicros(f.costSavedMicros),
    agent_cost: fromMicros(f.agentCostMicros),
    net_saved: fromMicros(f.costSavedMicros - f.agentCostMicros),
    review_hours: fromMicros(f.reviewHoursMicros),
    review_cost: fromMicros(f.reviewCostMicros),
  };
}
