/**
 * What each settings card edits: hand-picked fields of the plugins' live settings namespaces
 * (the host registers them; see each plugin's `src/settings.ts`), with labels in English and
 * Chinese. A namespace the host does not serve shows no card.
 */
import type { Bilingual } from './i18n.ts'

/** How a field is edited. */
export type FieldType = 'integer' | 'decimal' | 'boolean' | 'text' | 'secret' | { readonly choices: readonly string[] }

/** One editable field of a namespace section. */
export interface CardField {
  readonly path: readonly string[]
  readonly type: FieldType
  readonly label: Bilingual
}

/** One card: a namespace and its fields. */
export interface CardSpec {
  readonly namespace: string
  readonly title: Bilingual
  readonly description: Bilingual
  readonly fields: readonly CardField[]
}

const f = (path: string, type: FieldType, en: string, zh: string): CardField => ({ path: path.split('.'), type, label: { en, zh } })

/** The cards, in the order they appear under Settings → Plugins. */
export const CARDS: readonly CardSpec[] = [
  {
    namespace: 'memory-capture',
    title: { en: 'Memory · capture', zh: '记忆 · 记录' },
    description: { en: 'Recording your conversations, the ground every other memory is made from.', zh: '记录对话：其它所有记忆的原料。' },
    fields: [
      f('enabled', 'boolean', 'Record conversations', '记录对话'),
      f('stripCodeBlocks', 'boolean', 'Drop code blocks from replies', '回复中的代码块不记录'),
      f('maxMessageChars', 'integer', 'Characters per message (0 = unlimited)', '每条消息最多字符（0 = 不限）'),
    ],
  },
  {
    namespace: 'memory-recall',
    title: { en: 'Memory · recall', zh: '记忆 · 召回' },
    description: { en: 'What long-term memory puts in front of the model each turn.', zh: '每轮放到模型面前的长期记忆。' },
    fields: [
      f('defaultMode', { choices: ['auto', 'chat', 'work', 'off'] }, 'Default mode of new sessions', '新会话的默认模式'),
      f('recall.enabled', 'boolean', 'Recall before each turn', '每轮前召回'),
      f('recall.maxResults', 'integer', 'Most memories per turn', '每轮最多条数'),
      f('recall.maxCharsPerMemory', 'integer', 'Characters per memory (0 = unlimited)', '每条最多字符（0 = 不限）'),
      f('recall.maxTotalRecallChars', 'integer', 'Characters per turn (0 = unlimited)', '每轮最多字符（0 = 不限）'),
      f('recall.strategy', { choices: ['keyword', 'embedding', 'hybrid'] }, 'Search strategy', '检索策略'),
      f('recall.scoreThreshold', 'decimal', 'Relevance threshold (0–1)', '相关度阈值（0–1）'),
      f('recall.includePersona', 'boolean', 'Persona in the system prompt', '系统提示中加入画像'),
      f('recall.includeSceneNav', 'boolean', 'Scene navigation in the system prompt', '系统提示中加入场景导航'),
      f('embedding.enabled', 'boolean', 'Use an embeddings endpoint', '使用向量接口'),
      f('embedding.baseUrl', 'text', 'Embeddings base URL', '向量接口地址'),
      f('embedding.model', 'text', 'Embeddings model', '向量模型'),
      f('embedding.dimensions', 'integer', 'Vector dimensions', '向量维度'),
      f('embedding.apiKey', 'secret', 'Embeddings API key', '向量接口密钥'),
    ],
  },
  {
    namespace: 'memory-distill',
    title: { en: 'Memory · distillation', zh: '记忆 · 提炼' },
    description: { en: 'Which model distills conversations into memories, and when.', zh: '用哪个模型、在什么时候把对话提炼成记忆。' },
    fields: [
      f('llm.provider', 'text', 'Provider (empty = the session’s)', '提供方（留空 = 跟随会话）'),
      f('llm.model', 'text', 'Model (with provider)', '模型（与提供方一起）'),
      f('llm.maxTokens', 'integer', 'Output cap per call (tokens)', '每次调用输出上限（token）'),
      f('llm.reasoningEffort', 'text', 'Reasoning effort', '推理强度'),
      f('llm.timeoutMs', 'integer', 'Timeout per call (ms)', '每次调用超时（毫秒）'),
      f('extract.enabled', 'boolean', 'Extract memories (L1)', '提取记忆（L1）'),
      f('extract.minMessages', 'integer', 'New messages per extraction', '每次提取所需新消息数'),
      f('l2.enabled', 'boolean', 'Scenes (L2)', '场景（L2）'),
      f('l3.enabled', 'boolean', 'Persona (L3)', '画像（L3）'),
    ],
  },
  {
    namespace: 'memory-palace',
    title: { en: 'Memory · palace', zh: '记忆 · 记忆宫殿' },
    description: { en: 'How strongly the model is guided to read its verbatim archive back.', zh: '引导模型回读原文归档的力度。' },
    fields: [
      f('enabled', 'boolean', 'Palace on', '启用记忆宫殿'),
      f('recallStrength', { choices: ['off', 'low', 'medium', 'high', 'forced'] }, 'Recall strength', '回读力度'),
      f('injectNotice', 'boolean', 'Notes in the conversation', '在对话中插入提示'),
      f('recallBudgetRounds', 'integer', 'Search rounds per question', '每个问题的检索轮数'),
    ],
  },
  {
    namespace: 'memory-tree',
    title: { en: 'Memory · tree', zh: '记忆 · 记忆树' },
    description: { en: 'Keeping chit-chat out of the project mainline.', zh: '让闲聊不进入项目主线。' },
    fields: [
      f('autoRoute', 'boolean', 'Route every message automatically', '自动分流每条消息'),
      f('inject', 'boolean', 'Mainline in the system prompt', '系统提示中加入主线'),
      f('refresh', { choices: ['session', 'step'] }, 'Refresh the mainline section', '主线段落的刷新时机'),
    ],
  },
  {
    namespace: 'memory-cue-bank',
    title: { en: 'Memory · cue bank', zh: '记忆 · 触点唤醒' },
    description: { en: 'Bringing back an earlier topic when the conversation returns to it.', zh: '话题切换回来时，唤醒之前讨论过的内容。' },
    fields: [
      f('topic.switchDetection', 'boolean', 'Detect topic switches', '检测话题切换'),
      f('topic.switchThreshold', 'decimal', 'Switch threshold (keyword overlap, 0–1)', '切换阈值（关键词重合度，0–1）'),
      f('inject.enabled', 'boolean', 'Inject woken cues', '注入唤醒的触点'),
      f('inject.maxCues', 'integer', 'Most cues at once', '一次最多触点数'),
      f('inject.format', { choices: ['tagged', 'reference'] }, 'Block format', '唤醒块格式'),
      f('extract.enabled', 'boolean', 'Write cues after each turn', '每轮结束后写入触点'),
    ],
  },
]
