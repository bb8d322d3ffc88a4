/**
 * The memory-tree tools, defined once and served by both adapters: the DSH plugin registers
 * them with `ctx.tools.register`, the MCP server with `McpServer.registerTool`. Arguments are
 * validated with zod; a tool never throws: failures come back as `{ ok: false, error }` with a
 * stable code and a message the model can act on.
 */
import { parseToolInput, toolParameters } from '@dsh-memory/store/kit'
import { z } from 'zod'
import { describeError, isTreeError } from './errors.js'
import { isoDate } from './render.js'
import type { RouteDecision } from './router.js'
import { clip, oneLine } from './text.js'
import type { MemoryTree } from './tree.js'
import type { Caller } from './tree-contract.js'
import type { Branch, MainlineItem } from './types.js'

/** A JSON value (what a tool returns). */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue }

/** The canonical result of every tool: `text` is what the model reads. */
export type TreeToolResult =
  | { ok: true; tool: string; text: string; data: { [key: string]: JsonValue } }
  | { ok: false; tool: string; text: string; error: { code: string; message: string } }

/** What a tool body produces: the text the model reads and the structured data. */
export interface ToolOutput {
  text: string
  data: { [key: string]: JsonValue }
}

/** One tool: name, description, zod input schema and its handler. */
export interface TreeToolSpec {
  readonly name: string
  readonly description: string
  readonly input: z.ZodObject
  run(tree: MemoryTree, args: Record<string, unknown>, caller: Caller): Promise<ToolOutput>
}

const id = z.string().trim().min(1).max(100)
const text = (max: number) => z.string().min(1).max(max)
const list = z.array(text(2_000)).max(50)

const itemJson = (item: MainlineItem): { [key: string]: JsonValue } => ({
  id: item.id,
  kind: item.kind,
  text: item.text,
  source: item.source,
  status: item.status,
  stage: item.stage,
  createdAt: item.createdAt,
})
const branchJson = (branch: Branch): { [key: string]: JsonValue } => ({
  id: branch.id,
  title: branch.title,
  status: branch.status,
  stage: branch.stage,
  events: branch.eventCount,
  conclusion: branch.conclusion,
  cleared: branch.checkpointId !== null,
  createdAt: branch.createdAt,
})
const decisionJson = (decision: RouteDecision): { [key: string]: JsonValue } => ({
  route: decision.route,
  score: decision.score,
  projectScore: decision.projectScore,
  chatScore: decision.chatScore,
  matched: decision.matched,
})
const itemLine = (item: MainlineItem) => `- [${item.id}] ${item.kind}: ${oneLine(item.text)}`

/** The manual returned by `mt_help`. */
export const TREE_HELP = `memory-tree: long-term project memory as a tree.

- Mainline (root): structured state of the project: constraints, decisions, outcomes, open questions. It is injected as stable context in every session, so early constraints are never lost to summaries.
- Branches: explorations (a question, a trial, a dead end) with their own log. Their raw log never enters the mainline context.
- Merge: a branch's conclusions become mainline items; the branch is archived.
- Checkpoint: freezes the mainline into a review document that becomes the new baseline, and clears the stage's branches and recent turns.
- Chat partition: chit-chat (greetings, thanks, weather, 你好/谢谢/天气, こんにちは/ありがとう) is kept apart, compressed aggressively, never written to the mainline.

In DSH every user message is routed automatically and the mainline is injected automatically; these tools are for explicit control:
  mt_help                          this manual
  mt_status                        project, mainline counts and items, open branches, routing words
  mt_set_project(name)             switch this workspace to a project (created if new)
  mt_route(message)                classify a message (chat / project / unknown), record it, return the mainline context
  mt_branch(title[, note])         open a branch and make it current (project messages go to its log); mt_branch(branchId) re-enters an open one
  mt_merge([branchId][, summary])  merge a branch: pass a summary with labelled lines ("Decision: …", "Constraint: …", "Outcome: …", "Question: …") or lists; without them conclusions are extracted from the log. abandon=true closes it without conclusions
  mt_checkpoint(title[, review])   milestone: freeze the mainline into a review document (the new baseline)
  mt_get_context([maxRecent])      the mainline context as injected
  mt_chat(message)                 store chit-chat in the isolated chat partition
  mt_list_branches([status])       list branches (branchId shows one branch with its log)
  mt_note(kind, text)              add one mainline item directly
  mt_resolve(itemId, status)       mark an item resolved / dropped (or active again)`

/**
 * The instruction the model gets beside the tools (a static system-prompt section in DSH): the
 * reference ships the same advice as a system-instruction file its users paste into the persona.
 */
export const TREE_GUIDE = `Memory tree (mt_* tools). The project's mainline keeps its constraints, decisions, outcomes and open questions across sessions; user messages are routed to it automatically.
- Side question or trial (a tangent, "let's try…", "顺便问一下", "试试", "ちなみに"): work in a branch. The plugin opens one by itself for such a message (the mainline section then names it as current); otherwise call mt_branch(title) first.
- When a branch reaches a conclusion, call mt_merge(branchId, summary) with labelled lines ("Decision: …", "Constraint: …", "Outcome: …", "Question: …"); if it led nowhere, mt_merge(branchId, abandon: true). Only the conclusions reach the mainline.
- A new hard constraint or decision on the mainline: mt_note(kind, text). At a milestone: mt_checkpoint(title, review), which freezes the mainline as the new baseline and clears the stage's branches.
- Chit-chat stays out of the mainline by itself. mt_help has the manual.`

/**
 * What the model reads after a message that opened a branch by itself (the request's system
 * prompt was assembled before the message was routed). A tag, so it reads as context, not a turn.
 */
export function renderBranchNotice(branch: Branch): string {
  const title = oneLine(branch.title).replace(/[<>"]/g, '')
  return `<memory-tree-branch id="${branch.id}">\nMemory tree: the message above is a side question or a trial, so branch ${branch.id} "${title}" was opened and is current; this exchange is logged there, not on the mainline. When it reaches a conclusion, call mt_merge(branchId: "${branch.id}", summary: …); if it leads nowhere, mt_merge(branchId: "${branch.id}", abandon: true).\n</memory-tree-branch>`
}

/** Every tool, in help order. */
export const TREE_TOOLS: readonly TreeToolSpec[] = Object.freeze([
  {
    name: 'mt_help',
    description: 'Memory tree manual: what the mainline, branches, merge, checkpoints and the chat partition are, and every mt_* tool.',
    input: z.object({}).strict(),
    async run(): Promise<ToolOutput> {
      return { text: TREE_HELP, data: {} }
    },
  },
  {
    name: 'mt_status',
    description: 'Memory tree status for this workspace: the active project, mainline revision/stage, every mainline item, open branches, the baseline checkpoint and the routing keywords.',
    input: z.object({}).strict(),
    async run(tree, _args, caller): Promise<ToolOutput> {
      const status = await tree.status(caller)
      const routing = `routing: ${status.routing.chatKeywords} chat / ${status.routing.projectKeywords} project keywords (e.g. ${status.routing.samples.chat.slice(0, 4).join(', ')} | ${status.routing.samples.project.slice(0, 4).join(', ')}), margin ${status.routing.routeMargin}, unknown → ${status.routing.unknownRoute}`
      if (!status.project) {
        return {
          text: `No project is bound to this workspace yet (${status.workspace || 'no workspace'}); the first project message creates one, or call mt_set_project.\n${routing}`,
          data: { project: null, projects: status.projects, routing: status.routing as unknown as JsonValue },
        }
      }
      const p = status.project
      const lines = [
        `Project "${p.name}" (${p.id}) · stage ${p.stage} · revision ${p.revision}`,
        `Workspaces: ${status.workspaces.join(', ') || '—'}`,
        `Mainline: ${status.counts.constraint} constraints, ${status.counts.decision} decisions, ${status.counts.outcome} outcomes, ${status.counts.question} open questions; ${status.turns} recent turns`,
        ...status.items.map(itemLine),
        `Baseline: ${status.baseline ? `"${status.baseline.title}" (${status.baseline.id}, ${isoDate(status.baseline.createdAt)})` : 'none'}`,
        `Current branch: ${status.currentBranch ? `"${status.currentBranch.title}" (${status.currentBranch.id})` : 'mainline'}`,
        `Open branches: ${status.openBranches.map((b) => `"${b.title}" (${b.id}, ${b.eventCount} events)`).join(', ') || 'none'}`,
        routing,
      ]
      return {
        text: lines.join('\n'),
        data: {
          project: { id: p.id, name: p.name, stage: p.stage, revision: p.revision, currentBranchId: p.currentBranchId, baselineCheckpointId: p.baselineCheckpointId },
          workspaces: status.workspaces,
          counts: status.counts,
          items: status.items.map(itemJson),
          openBranches: status.openBranches.map(branchJson),
          turns: status.turns,
          projects: status.projects,
          routing: status.routing as unknown as JsonValue,
          projectionDir: status.projectionDir,
        },
      }
    },
  },
  {
    name: 'mt_set_project',
    description: 'Switch this workspace to the named project (the memory-tree root), creating it if new. Later sessions in this workspace use it.',
    input: z.object({ name: text(200).describe('Project name, e.g. "orders-service" or "论文调研".') }).strict(),
    async run(tree, args, caller): Promise<ToolOutput> {
      const { project, created } = await tree.setProject(args.name as string, caller)
      const context = await tree.getContext(caller)
      return {
        text: `${created ? 'Created' : 'Switched to'} project "${project.name}" (${project.id}).${context.text ? `\n\n${context.text}` : ' Its mainline is empty.'}`,
        data: { project: { id: project.id, name: project.name, revision: project.revision, stage: project.stage }, created, context: context.text },
      }
    },
  },
  {
    name: 'mt_route',
    description:
      'Classify a message as chit-chat, project work or unknown (keyword lists in English/Chinese/Japanese plus code signals), record it where it belongs (chat partition, current branch log, or mainline) and return the mainline context. In DSH user messages are routed automatically; use this for explicit control.',
    input: z
      .object({
        message: text(20_000).describe('The message to route.'),
        role: z.enum(['user', 'assistant']).optional().describe('Who said it (default user).'),
        record: z.boolean().optional().describe('Record the message (default true); false only classifies.'),
      })
      .strict(),
    async run(tree, args, caller): Promise<ToolOutput> {
      const message = args.message as string
      const decision = tree.route(message)
      if (args.record === false) {
        return { text: `route: ${decision.route} (score ${decision.score}; project: ${decision.matched.project.join(', ') || '—'}; chat: ${decision.matched.chat.join(', ') || '—'})`, data: { decision: decisionJson(decision), recorded: false } }
      }
      const role = (args.role as 'user' | 'assistant' | undefined) ?? 'user'
      const result = await tree.recordMessage({ role, text: message, caller, decision, follow: decision.route === 'chat' ? 'chat' : 'mainline' })
      const context = result.destination === 'chat' ? { text: '' } : await tree.getContext(caller)
      const where =
        result.destination === 'chat'
          ? 'the chat partition (not the mainline)'
          : result.destination === 'branch'
            ? result.openedBranch
              ? `branch ${result.branchId} "${result.openedBranch.title}", opened now for this side question or trial (merge it with mt_merge when it concludes)`
              : `branch ${result.branchId}`
            : result.destination === 'mainline'
              ? `the mainline of "${result.project?.name}"`
              : 'nowhere (unknown route is configured to skip)'
      const extracted = result.extracted.length > 0 ? `\nRecorded on the mainline:\n${result.extracted.map(itemLine).join('\n')}` : ''
      return {
        text: `route: ${decision.route} (score ${decision.score}) → ${where}${result.duplicate ? ' (already recorded)' : ''}.${extracted}${context.text ? `\n\n${context.text}` : ''}`,
        data: {
          decision: decisionJson(decision),
          destination: result.destination,
          projectId: result.project?.id ?? null,
          branchId: result.branchId,
          extracted: result.extracted.map(itemJson),
          duplicate: result.duplicate,
          context: context.text,
        },
      }
    },
  },
  {
    name: 'mt_branch',
    description:
      'Open a branch for an exploration (a side question, a trial, a comparison) and make it current: project messages go to its own log, which never enters the mainline context. Returns the branchId to pass to mt_merge. With branchId instead of title, re-enter an open branch.',
    input: z
      .object({
        title: text(200).optional().describe('What the branch explores, e.g. "数据库选型" or "compare ORMs".'),
        note: text(4_000).optional().describe('Optional first log entry (the question or plan).'),
        branchId: id.optional().describe('Re-enter this open branch instead of opening a new one.'),
      })
      .strict()
      .refine((value) => (value.title === undefined) !== (value.branchId === undefined), { message: 'pass exactly one of title (open a new branch) or branchId (re-enter an open branch)' }),
    async run(tree, args, caller): Promise<ToolOutput> {
      if (args.branchId !== undefined) {
        const project = await tree.checkout(args.branchId as string, caller)
        if (args.note !== undefined) await tree.logToBranch({ branchId: args.branchId as string, text: args.note as string }, caller)
        return { text: `Branch ${args.branchId} is current again in "${project.name}".`, data: { branchId: args.branchId as string, projectId: project.id, revision: project.revision } }
      }
      const { project, branch } = await tree.openBranch({ title: args.title as string, ...(args.note === undefined ? {} : { note: args.note as string }) }, caller)
      return {
        text: `Opened branch ${branch.id} "${branch.title}" in "${project.name}"; it is current. Merge it with mt_merge(branchId: "${branch.id}", summary: …) when you reach a conclusion.`,
        data: { branchId: branch.id, title: branch.title, projectId: project.id, revision: project.revision },
      }
    },
  },
  {
    name: 'mt_merge',
    description:
      'Merge a branch into the mainline and archive it. Give the conclusions as a summary with labelled lines ("Decision: …", "Constraint: …", "Outcome: …", "Question: …"; 决定/约束/结论/待解 and 決定/制約/結論/課題 work too) and/or as lists; without them they are extracted from the branch log. Only conclusions are stored, never the raw log. abandon=true closes the branch without adding anything.',
    input: z
      .object({
        branchId: id.optional().describe('Branch to merge (default: the current branch).'),
        summary: text(12_000).optional().describe('Structured conclusion, one statement per line.'),
        decisions: list.optional(),
        constraints: list.optional(),
        outcomes: list.optional(),
        questions: list.optional().describe('Open questions the branch leaves.'),
        abandon: z.boolean().optional().describe('Close without conclusions (a dead end).'),
      })
      .strict(),
    async run(tree, args, caller): Promise<ToolOutput> {
      const result = await tree.merge(args as never, caller)
      const lines = [
        `${result.branch.status === 'abandoned' ? 'Abandoned' : 'Merged'} branch ${result.branch.id} "${result.branch.title}" into "${result.project.name}" (revision ${result.project.revision}).`,
        ...(result.added.length > 0 ? ['Added to the mainline:', ...result.added.map(itemLine)] : []),
        ...(result.skipped.length > 0 ? [`Already on the mainline (skipped): ${result.skipped.map((c) => `"${clip(c.text, 80)}"`).join(', ')}`] : []),
        ...(result.truncated.length > 0 ? [`Not added (over the per-merge limit): ${result.truncated.length}`] : []),
        ...(result.heuristic ? ['(Conclusions were extracted from the branch log; pass a summary to choose them yourself.)'] : []),
      ]
      return {
        text: lines.join('\n'),
        data: {
          branch: branchJson(result.branch),
          added: result.added.map(itemJson),
          skipped: result.skipped.map((c) => ({ kind: c.kind, text: c.text })),
          truncated: result.truncated.length,
          heuristic: result.heuristic,
          revision: result.project.revision,
        },
      }
    },
  },
  {
    name: 'mt_checkpoint',
    description:
      'Milestone review: freeze the current mainline into a review document that becomes the new baseline, clear this stage\'s branches and recent mainline turns, and start the next stage. Branches still open are closed unmerged (their logs stay readable) unless the plugin is set to carry them over.',
    input: z
      .object({
        title: text(200).describe('Milestone name, e.g. "Stage 1 review" or "阶段1复盘".'),
        review: text(8_000).optional().describe('Your review of the stage (what worked, what did not); default: an automatic summary.'),
      })
      .strict(),
    async run(tree, args, caller): Promise<ToolOutput> {
      const result = await tree.checkpoint({ title: args.title as string, ...(args.review === undefined ? {} : { review: args.review as string }) }, caller)
      return {
        text: `Checkpoint ${result.checkpoint.id} "${result.checkpoint.title}" froze stage ${result.checkpoint.stage} of "${result.project.name}" (revision ${result.checkpoint.revision}); it is the new baseline. Cleared ${result.clearedBranches} branch reference(s) and ${result.clearedTurns} recent turn(s).${result.path ? ` Document: ${result.path}` : ''}`,
        data: {
          checkpointId: result.checkpoint.id,
          title: result.checkpoint.title,
          stage: result.checkpoint.stage,
          revision: result.project.revision,
          clearedBranches: result.clearedBranches,
          clearedTurns: result.clearedTurns,
          document: result.checkpoint.document,
          path: result.path ?? null,
        },
      }
    },
  },
  {
    name: 'mt_get_context',
    description: 'The mainline context of this workspace\'s project (constraints, decisions, outcomes, open questions, baseline, recent mainline turns) as it is injected. Never includes branch logs or chit-chat.',
    input: z.object({ maxRecent: z.number().int().min(0).max(50).optional().describe('Recent mainline turns to include (default from config).') }).strict(),
    async run(tree, args, caller): Promise<ToolOutput> {
      const context = await tree.getContext(caller, args.maxRecent === undefined ? {} : { recentTurns: args.maxRecent as number })
      return {
        text: context.text || 'The mainline is empty (no project yet, or nothing recorded).',
        data: { projectId: context.project?.id ?? null, revision: context.project?.revision ?? null, context: context.text },
      }
    },
  },
  {
    name: 'mt_chat',
    description: 'Store a chit-chat message in the isolated chat partition: compressed aggressively (old messages fold into a digest) and never written to a project mainline.',
    input: z.object({ message: text(20_000) }).strict(),
    async run(tree, args, caller): Promise<ToolOutput> {
      const result = await tree.chat(args.message as string, caller)
      return {
        text: `Stored in the chat partition (not the mainline).${result.folded > 0 ? ` Folded ${result.folded} older message(s) into the digest.` : ''}${result.digest ? ` Digest: ${result.digest.text}` : ''}`,
        data: { entryId: result.entry.id, folded: result.folded, digest: result.digest?.text ?? null },
      }
    },
  },
  {
    name: 'mt_list_branches',
    description: 'List the branches of this workspace\'s project (this stage by default). With branchId, show that branch with its full log (for review; logs are never injected).',
    input: z
      .object({
        status: z.enum(['active', 'merged', 'abandoned', 'all']).optional().describe('Default all.'),
        includeCleared: z.boolean().optional().describe('Also branches cleared by earlier checkpoints.'),
        branchId: id.optional().describe('Show one branch and its log.'),
      })
      .strict(),
    async run(tree, args, caller): Promise<ToolOutput> {
      if (args.branchId !== undefined) {
        const { branch, events } = await tree.branchLog(args.branchId as string, caller)
        const log = events.map((event) => `- ${event.kind}: ${clip(oneLine(event.text), 300)}`)
        return {
          text: [`Branch ${branch.id} "${branch.title}" (${branch.status}, stage ${branch.stage})`, ...(branch.conclusion ? [`Conclusion:\n${branch.conclusion}`] : []), 'Log:', ...log].join('\n'),
          data: { branch: branchJson(branch), events: events.map((event) => ({ kind: event.kind, text: event.text, createdAt: event.createdAt })) },
        }
      }
      const { project, branches } = await tree.listBranches(caller, {
        status: (args.status as Branch['status'] | 'all' | undefined) ?? 'all',
        ...(args.includeCleared === undefined ? {} : { includeCleared: args.includeCleared as boolean }),
      })
      const lines = branches.map((b) => `- ${b.id} "${b.title}" ${b.status}${b.id === project.currentBranchId ? ' (current)' : ''} · ${b.eventCount} events · ${isoDate(b.createdAt)}${b.checkpointId ? ' · cleared' : ''}`)
      return {
        text: branches.length > 0 ? `Branches of "${project.name}":\n${lines.join('\n')}` : `No branches in "${project.name}" for this filter.`,
        data: { projectId: project.id, currentBranchId: project.currentBranchId, branches: branches.map(branchJson) },
      }
    },
  },
  {
    name: 'mt_note',
    description: 'Add one item to the mainline state directly: a constraint, decision, outcome or open question. Prefer this for facts that must survive every summary.',
    input: z
      .object({
        kind: z.enum(['constraint', 'decision', 'outcome', 'question']),
        text: text(2_000),
        expectedRevision: z.number().int().min(1).optional().describe('Fail with a conflict if the mainline moved past this revision.'),
      })
      .strict(),
    async run(tree, args, caller): Promise<ToolOutput> {
      const result = await tree.note(args as never, caller)
      return {
        text: result.item ? `Added ${itemLine(result.item).slice(2)} (revision ${result.project.revision}).` : `Already on the mainline${result.duplicateOf ? `: ${itemLine(result.duplicateOf).slice(2)}` : ''}.`,
        data: { item: result.item ? itemJson(result.item) : null, duplicateOf: result.duplicateOf ? itemJson(result.duplicateOf) : null, revision: result.project.revision },
      }
    },
  },
  {
    name: 'mt_resolve',
    description: 'Change a mainline item\'s status: resolved (an answered question or a met goal), dropped (no longer true), or active again.',
    input: z
      .object({
        itemId: id,
        status: z.enum(['resolved', 'dropped', 'active']),
        expectedRevision: z.number().int().min(1).optional(),
      })
      .strict(),
    async run(tree, args, caller): Promise<ToolOutput> {
      const result = await tree.setItemStatus(args as never, caller)
      return { text: `Item ${result.item.id} is now ${result.item.status} (revision ${result.project.revision}).`, data: { item: itemJson(result.item), revision: result.project.revision } }
    },
  },
] satisfies TreeToolSpec[])

/** Names of every tool. */
export const TREE_TOOL_NAMES: readonly string[] = Object.freeze(TREE_TOOLS.map((tool) => tool.name))

/**
 * Validate `rawArgs` and run the named tool. Never throws: invalid arguments, tree errors
 * and unexpected failures all become `{ ok: false }` results with a code.
 */
export async function runTreeTool(tree: MemoryTree, name: string, rawArgs: unknown, caller: Caller): Promise<TreeToolResult> {
  const spec = TREE_TOOLS.find((tool) => tool.name === name)
  if (!spec) return failure(name, 'not-found', `unknown memory-tree tool ${name}`)
  const parsed = parseToolInput(spec.input, rawArgs)
  if (!parsed.ok) return failure(name, 'invalid-argument', `invalid arguments for ${name}: ${parsed.message}`)
  try {
    const { text: body, data } = await spec.run(tree, parsed.value as Record<string, unknown>, caller)
    return { ok: true, tool: name, text: body, data }
  } catch (error) {
    if (isTreeError(error)) return failure(name, error.code, error.message)
    return failure(name, 'internal', `${name} failed: ${describeError(error)}`)
  }
}

function failure(tool: string, code: string, message: string): TreeToolResult {
  return { ok: false, tool, text: `${tool} failed (${code}): ${message}`, error: { code, message } }
}

/** The JSON Schema of a tool's arguments (for hosts that take raw JSON Schema). */
export function toolParametersSchema(spec: TreeToolSpec): Record<string, unknown> {
  return toolParameters(spec.input)
}
