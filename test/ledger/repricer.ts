import { reviewFigures } from '../../src/ledger/figures.js';
import type { Repricer } from '../../src/ledger/restatement.js';
import { DEFAULT_OUTCOME_CREDIT } from '../../src/orgs/organization-record.js';
import type { Outcome } from '../../src/orgs/organizations.js';
import { computeSavings } from '../../src/tracking/savings.js';

/**
 * The tests' repricer: "the baseline of task type `taskType` becomes `minutes`". An event of that
 * type is priced again with the new baseline (its outcome credit, or its review's measured time,
 * at the rate in force); others are left as they are.
 */
export function baselineRepricer(taskType: string, minutes: number): Repricer {
  return (event, current) => {
    if (event.task_type !== taskType || current.baselineMinutes === minutes) return null;
    const rate = current.hourlyRateMicros;
    if (current.review !== null)
      return {
        ...reviewFigures({
          verdict: current.review.verdict,
          reviewMinutes: current.review.reviewMinutes,
          baselineMinutes: minutes,
          hourlyRateMicros: rate,
        }),
        baselineMinutes: minutes,
      };
    const savings = computeSavings({
      baselineMinutes: minutes,
      creditMicros: Math.round(DEFAULT_OUTCOME_CREDIT[event.outcome as Outcome] * 1e6),
      hourlyRateMicros: rate,
      agentCostMicros: null,
    });
    return {
      hoursSavedMicros: savings.hoursSavedMicros,
      costSavedMicros: savings.costSavedMicros,
      baselineMinutes: minutes,
    };
  };
}
