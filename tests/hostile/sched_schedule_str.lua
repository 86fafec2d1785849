return {schedule = "yes"}
