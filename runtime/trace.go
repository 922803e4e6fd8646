package runtime

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/runtime/internal/httpwasm"
)

var (
	phaseRequest  = attribute.String("sluice.filter.phase", "request")
	phaseResponse = attribute.String("sluice.filter.phase", "response")
)

// startSpan starts "filter NAME" as a child of the span in the request's
// context, only when that span is sampled: an unsampled request costs one
// context lookup, and none when the engine has no TracerProvider.
func (f *Filter) startSpan(x HTTP, mp *modulePool, phase httpwasm.Phase) trace.Span {
	if !f.e.traced {
		return nil
	}
	ctx := x.Context()
	if !trace.SpanContextFromContext(ctx).IsSampled() {
		return nil
	}
	p := phaseRequest
	if phase == httpwasm.PhaseResponse {
		p = phaseResponse
	}
	_, span := f.e.tracer.Start(ctx, f.spanName,
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(f.nameAttr, mp.digest, p))
	return span
}

func endSpan(span trace.Span, outcome string, err error) {
	span.SetAttributes(attribute.String("sluice.filter.outcome", outcome))
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, outcome)
	}
	span.End()
}
