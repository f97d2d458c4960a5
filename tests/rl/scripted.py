"""What a scripted test sampler needs to serve continued conversations
(rollout.continue_cache): the state it returns is each row's whole sequence
so far, so ``whole`` gives it the prompt a re-encoding rollout would have
sent. A scripted sampler therefore sees the same prompts either way, and
the rollout's bookkeeping of what each row sends is checked on the way."""
from models.sampler import GenerationResult


class ContinuesConversations:
    @staticmethod
    def whole(prompts, state):
        """Each row's whole prompt: ``state``'s sequence + the tokens sent."""
        if state is None:
            return [list(p) for p in prompts]
        assert len(state) == len(prompts), "a continued call sends one block per kept row"
        return [list(s) + list(p) for s, p in zip(state, prompts)]

    def select_rows(self, state, rows):
        return [state[r] for r in rows]

    @staticmethod
    def result(whole, tokens, logprobs, reasons) -> GenerationResult:
        """The answers, with each row's sequence (prompt + answer) as the state."""
        return GenerationResult(tokens, logprobs, reasons,
                                [w + list(t) for w, t in zip(whole, tokens)])
