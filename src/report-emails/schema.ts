import { Type } from '@sinclair/typebox';
import { ListQueryFields, named, Nullable, Timestamp } from '../http/schemas.js';
import { FREQUENCIES } from './periods.js';
import { MAX_RECIPIENTS } from './schedules.js';

const Frequency = named(
  'ReportFrequency',
  Type.Unsafe<(typeof FREQUENCIES)[number]>({
    type: 'string',
    enum: [...FREQUENCIES],
    description: 'weekly (last ISO week, Mondays 09:00 UTC) or monthly (last month, on the 1st at 09:00 UTC)',
  }),
);
const Recipients = Type.Array(Type.String({ minLength: 3, maxLength: 254 }), {
  minItems: 1,
  maxItems: MAX_RECIPIENTS,
  description: 'E-mail addresses',
});

export const CreateScheduleBody = named(
  'CreateReportScheduleRequest',
  Type.Object({ frequency: Frequency, recipients: Recipients }, { additionalProperties: false }),
);
export const UpdateScheduleBody = named(
  'UpdateReportScheduleRequest',
  Type.Object(
    { frequency: Type.Optional(Frequency), recipients: Type.Optional(Recipients) },
    { additionalProperties: false },
  ),
);
export const ScheduleParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) });
export const ScheduleListQuery = Type.Object(ListQueryFields, { additionalProperties: false });

export const ScheduleSchema = named(
  'ReportSchedule',
  Type.Object({
    id: Type.String(),
    frequency: Frequency,
    recipients: Type.Array(
      Type.Object({
        email: Type.String(),
        unsubscribed_at: Nullable({ ...Timestamp, description: 'When the recipient unsubscribed' }),
      }),
    ),
    next_send_at: Timestamp,
    created_at: Timestamp,
    updated_at: Timestamp,
  }),
);
export const ScheduleListSchema = named(
  'ReportScheduleList',
  Type.Object({ data: Type.Array(ScheduleSchema), next_cursor: Nullable(Type.String()) }),
);
export const SendNowSchema = named(
  'ReportSendResult',
  Type.Object({
    period: Type.String({ description: 'The period sent: YYYY-MM-DD (Monday of the week) or YYYY-MM' }),
    queued: Type.Array(Type.String(), {
      description: 'Recipients queued; those who had it already are left out',
    }),
  }),
);
