import type { Category } from './categories.js';

export interface BuiltinTaskType {
  key: string;
  display_name: string;
  category: Category;
  default_baseline_minutes: number;
}

export const BUILTIN_BASELINE_SOURCE = 'Tally default estimate';

/** The 50 built-in task types of DESIGN §9, in catalogue order. */
export const BUILTIN_TASK_TYPES: readonly BuiltinTaskType[] = [
  {
    key: 'support_ticket_triage',
    display_name: 'Triage and route a ticket',
    category: 'support',
    default_baseline_minutes: 4,
  },
  {
    key: 'support_ticket_reply',
    display_name: 'First reply to a ticket',
    category: 'support',
    default_baseline_minutes: 8,
  },
  {
    key: 'support_ticket_resolution',
    display_name: 'Resolve a ticket end to end',
    category: 'support',
    default_baseline_minutes: 25,
  },
  {
    key: 'support_refund_request',
    display_name: 'Process a refund request',
    category: 'support',
    default_baseline_minutes: 10,
  },
  {
    key: 'support_faq_answer',
    display_name: 'Answer a question from the knowledge base',
    category: 'support',
    default_baseline_minutes: 5,
  },
  {
    key: 'support_chat_conversation',
    display_name: 'Handle a live chat',
    category: 'support',
    default_baseline_minutes: 12,
  },
  {
    key: 'support_escalation_summary',
    display_name: 'Summarise a thread for escalation',
    category: 'support',
    default_baseline_minutes: 10,
  },
  {
    key: 'ops_invoice_processing',
    display_name: 'Enter an invoice',
    category: 'ops',
    default_baseline_minutes: 12,
  },
  {
    key: 'ops_expense_review',
    display_name: 'Review an expense report',
    category: 'ops',
    default_baseline_minutes: 8,
  },
  {
    key: 'ops_incident_triage',
    display_name: 'Triage an alert',
    category: 'ops',
    default_baseline_minutes: 15,
  },
  {
    key: 'ops_meeting_scheduling',
    display_name: 'Schedule a meeting',
    category: 'ops',
    default_baseline_minutes: 6,
  },
  {
    key: 'ops_vendor_onboarding',
    display_name: 'Onboard a vendor',
    category: 'ops',
    default_baseline_minutes: 45,
  },
  {
    key: 'ops_report_compilation',
    display_name: 'Compile a recurring report',
    category: 'ops',
    default_baseline_minutes: 60,
  },
  {
    key: 'sales_lead_qualification',
    display_name: 'Qualify an inbound lead',
    category: 'sales',
    default_baseline_minutes: 15,
  },
  {
    key: 'sales_lead_enrichment',
    display_name: 'Enrich a lead record',
    category: 'sales',
    default_baseline_minutes: 6,
  },
  {
    key: 'sales_outreach_email',
    display_name: 'Personalised outreach e-mail',
    category: 'sales',
    default_baseline_minutes: 10,
  },
  {
    key: 'sales_call_summary',
    display_name: 'Summarise a call and update the CRM',
    category: 'sales',
    default_baseline_minutes: 15,
  },
  {
    key: 'sales_proposal_draft',
    display_name: 'Draft a proposal',
    category: 'sales',
    default_baseline_minutes: 90,
  },
  {
    key: 'sales_crm_update',
    display_name: 'Update CRM records',
    category: 'sales',
    default_baseline_minutes: 5,
  },
  {
    key: 'legal_contract_review',
    display_name: 'First-pass contract review',
    category: 'legal',
    default_baseline_minutes: 60,
  },
  { key: 'legal_nda_review', display_name: 'Review an NDA', category: 'legal', default_baseline_minutes: 20 },
  {
    key: 'legal_clause_extraction',
    display_name: 'Extract key clauses',
    category: 'legal',
    default_baseline_minutes: 30,
  },
  {
    key: 'legal_compliance_check',
    display_name: 'Compliance checklist review',
    category: 'legal',
    default_baseline_minutes: 45,
  },
  {
    key: 'legal_dsar_response',
    display_name: 'Prepare a data subject access response',
    category: 'legal',
    default_baseline_minutes: 120,
  },
  {
    key: 'legal_research_memo',
    display_name: 'Short legal research memo',
    category: 'legal',
    default_baseline_minutes: 180,
  },
  {
    key: 'content_blog_draft',
    display_name: 'Draft a blog post',
    category: 'content',
    default_baseline_minutes: 120,
  },
  {
    key: 'content_social_post',
    display_name: 'Social media post',
    category: 'content',
    default_baseline_minutes: 10,
  },
  {
    key: 'content_product_description',
    display_name: 'Product description',
    category: 'content',
    default_baseline_minutes: 15,
  },
  {
    key: 'content_translation_page',
    display_name: 'Translate one page (~250 words)',
    category: 'content',
    default_baseline_minutes: 30,
  },
  {
    key: 'content_proofreading',
    display_name: 'Proofread a page',
    category: 'content',
    default_baseline_minutes: 15,
  },
  {
    key: 'content_newsletter_draft',
    display_name: 'Draft a newsletter',
    category: 'content',
    default_baseline_minutes: 90,
  },
  {
    key: 'content_image_alt_text',
    display_name: 'Image alt text',
    category: 'content',
    default_baseline_minutes: 2,
  },
  {
    key: 'research_web_search_summary',
    display_name: 'Search and summarise findings',
    category: 'research',
    default_baseline_minutes: 30,
  },
  {
    key: 'research_competitor_profile',
    display_name: 'Competitor profile',
    category: 'research',
    default_baseline_minutes: 120,
  },
  {
    key: 'research_literature_review',
    display_name: 'Summarise a paper',
    category: 'research',
    default_baseline_minutes: 45,
  },
  {
    key: 'research_market_sizing',
    display_name: 'Market sizing with sources',
    category: 'research',
    default_baseline_minutes: 180,
  },
  {
    key: 'research_interview_synthesis',
    display_name: 'Synthesise an interview',
    category: 'research',
    default_baseline_minutes: 40,
  },
  {
    key: 'research_fact_check',
    display_name: 'Fact-check a claim',
    category: 'research',
    default_baseline_minutes: 15,
  },
  {
    key: 'data_entry_record',
    display_name: 'Enter one record',
    category: 'data',
    default_baseline_minutes: 3,
  },
  {
    key: 'data_cleaning_batch',
    display_name: 'Clean a batch of records',
    category: 'data',
    default_baseline_minutes: 45,
  },
  { key: 'data_sql_query', display_name: 'Ad-hoc SQL query', category: 'data', default_baseline_minutes: 20 },
  {
    key: 'data_dashboard_update',
    display_name: 'Update a dashboard',
    category: 'data',
    default_baseline_minutes: 30,
  },
  {
    key: 'data_document_extraction',
    display_name: 'Extract fields from a document',
    category: 'data',
    default_baseline_minutes: 8,
  },
  {
    key: 'data_spreadsheet_analysis',
    display_name: 'Analyse a spreadsheet',
    category: 'data',
    default_baseline_minutes: 60,
  },
  {
    key: 'dev_code_review',
    display_name: 'Review a pull request',
    category: 'dev',
    default_baseline_minutes: 30,
  },
  {
    key: 'dev_bug_fix',
    display_name: 'Fix a small bug with a test',
    category: 'dev',
    default_baseline_minutes: 90,
  },
  {
    key: 'dev_unit_tests',
    display_name: 'Unit tests for a module',
    category: 'dev',
    default_baseline_minutes: 60,
  },
  {
    key: 'dev_documentation',
    display_name: 'Technical documentation',
    category: 'dev',
    default_baseline_minutes: 45,
  },
  {
    key: 'dev_dependency_upgrade',
    display_name: 'Upgrade a dependency',
    category: 'dev',
    default_baseline_minutes: 60,
  },
  {
    key: 'dev_ci_failure_triage',
    display_name: 'Diagnose a failing CI run',
    category: 'dev',
    default_baseline_minutes: 20,
  },
];

const BY_KEY = new Map(BUILTIN_TASK_TYPES.map((t) => [t.key, t]));

export function findBuiltin(key: string): BuiltinTaskType | undefined {
  return BY_KEY.get(key);
}
