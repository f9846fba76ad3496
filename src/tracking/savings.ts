import { MICROS, mulDivRound, toMicros } from '../money.js';

export interface SavingsInput {
  baselineMinutes: number;
  /** Outcome credit in millionths (success = 1,000,000 by default). */
  creditMicros: number;
  hourlyRateMicros: number;
  agentCostMicros: number | null;
}

export interface Savings {
  hoursSavedMicros: number;
  costSavedMicros: number;
  netSavedMicros: number;
}

/**
 * DESIGN §4: hours_saved = baseline × credit / 60 and cost_saved = hours_saved × rate, both
 * rounded once to micro-units; net_saved = cost_saved − agent_cost exactly.
 */
export function computeSavings(input: SavingsInput): Savings {
  const baselineMicroMinutes = toMicros(input.baselineMinutes);
  const hoursSavedMicros = mulDivRound(baselineMicroMinutes, input.creditMicros, 60 * MICROS);
  const costSavedMicros = mulDivRound(hoursSavedMicros, input.hourlyRateMicros, MICROS);
  return {
    hoursSavedMicros,
    costSavedMicros,
    netSavedMicros: costSavedMicros - (input.agentCostMicros ?? 0),
  };
}
